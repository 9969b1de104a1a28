package evals

import (
	"regexp"
	"strings"
)

// The regular expressions of lm-eval's wikitext_detokenizer
// (lm_eval/tasks/wikitext/preprocess_wikitext.py), in its order. The first
// one keeps lm-eval's slashes: it matches "/' 5/" literally, a quirk kept so
// scores stay comparable.
var (
	wikiQuoteDigit = regexp.MustCompile(`/' [0-9]/`)
	wikiParens     = regexp.MustCompile(`\(\s*([^\)]*?)\s*\)`)
	wikiBrackets   = regexp.MustCompile(`\[\s*([^\]]*?)\s*\]`)
	wikiBraces     = regexp.MustCompile(`{\s*([^}]*?)\s*}`)
	wikiDQuotes    = regexp.MustCompile(`"\s*([^"]*?)\s*"`)
	wikiSQuotes    = regexp.MustCompile(`'\s*([^']*?)\s*'`)
)

// WikitextDetokenize undoes wikitext's tokenization (" @-@ ", spaces
// before punctuation, "= = ="), exactly as lm-eval's wikitext task does
// before scoring a page; word and byte counts still come from the original.
func WikitextDetokenize(s string) string {
	s = strings.ReplaceAll(s, "s '", "s'")
	s = wikiQuoteDigit.ReplaceAllString(s, "/'[0-9]/")
	for _, r := range [][2]string{
		{" @-@ ", "-"}, {" @,@ ", ","}, {" @.@ ", "."},
		{" : ", ": "}, {" ; ", "; "}, {" . ", ". "}, {" ! ", "! "}, {" ? ", "? "}, {" , ", ", "},
	} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	s = wikiParens.ReplaceAllString(s, "(${1})")
	s = wikiBrackets.ReplaceAllString(s, "[${1}]")
	s = wikiBraces.ReplaceAllString(s, "{${1}}")
	s = wikiDQuotes.ReplaceAllString(s, `"${1}"`)
	s = wikiSQuotes.ReplaceAllString(s, "'${1}'")
	for _, r := range [][2]string{
		{"= = = =", "===="}, {"= = =", "==="}, {"= =", "=="},
		{" \u00b0 ", "\u00b0"}, {" \n", "\n"}, {"\n ", "\n"}, {" N ", " 1 "}, {" 's", "'s"},
	} {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}
