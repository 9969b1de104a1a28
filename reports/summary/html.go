package summary

import (
	"bytes"
	"html"
	"strings"

	"github.com/glmbench/glmbench/internal/text"
)

// HTMLSuffix ends every message HTMLPage makes of a page: what came was a
// web page (a proxy's or a CDN's error page, a login portal), not the
// API's answer.
const HTMLSuffix = "(an HTML page)"

// htmlNoText is HTMLPage's message for a page whose start shows no title
// and no text (Cloudflare's error pages open with some 300 bytes of
// markup before their <title>, past the 200 a record keeps).
const htmlNoText = "an HTML page"

// htmlReadLimit is how much of a page HTMLPage reads for its title or text.
const htmlReadLimit = 16 << 10

// htmlMessageLimit bounds the title or text HTMLPage quotes, in bytes.
const htmlMessageLimit = 100

// HTMLPage reports whether body is (the start of) an HTML page, and if so
// words it on one line without its markup: the page's <title> (nginx's
// "502 Bad Gateway", Cloudflare's "example.com | 502: Bad gateway"), else
// its text, clipped, then HTMLSuffix; "an HTML page" alone when the start
// of the page shows neither. A page is a body whose first bytes (after a
// byte order mark and white space) open a doctype, an html, head, body or
// title tag, or a comment before an html tag; JSON and XML are not.
func HTMLPage(body []byte) (string, bool) {
	b := bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF")), " \t\r\n")
	head := strings.ToLower(string(b[:min(len(b), 512)]))
	isPage := false
	for _, open := range []string{"<!doctype html", "<html", "<head", "<body", "<title"} {
		if strings.HasPrefix(head, open) {
			isPage = true
			break
		}
	}
	if !isPage && !(strings.HasPrefix(head, "<!--") && strings.Contains(head, "<html")) {
		return "", false
	}
	b = b[:min(len(b), htmlReadLimit)]
	msg := pageTitle(b)
	if msg == "" {
		msg = pageText(b)
	}
	if msg == "" {
		return htmlNoText, true
	}
	return text.Clip(noControl(msg), htmlMessageLimit, "…") + " " + HTMLSuffix, true
}

// pageTitle is the text of b's first <title> element, entities decoded and
// white space collapsed (to where b ends, if it was cut inside); "" when
// it has none.
func pageTitle(b []byte) string {
	low := bytes.ToLower(b)
	i := bytes.Index(low, []byte("<title"))
	if i < 0 {
		return ""
	}
	j := bytes.IndexByte(low[i:], '>')
	if j < 0 {
		return ""
	}
	t := b[i+j+1:]
	if k := bytes.Index(low[i+j+1:], []byte("</title")); k >= 0 {
		t = t[:k]
	}
	return collapse(html.UnescapeString(strings.ToValidUTF8(string(t), "?")))
}

// pageText is b's text outside its tags, comments, scripts and styles,
// entities decoded and white space collapsed.
func pageText(b []byte) string {
	var out strings.Builder
	low := bytes.ToLower(b)
	for i := 0; i < len(b) && out.Len() < 4*htmlMessageLimit; {
		switch {
		case bytes.HasPrefix(low[i:], []byte("<!--")):
			i = skipPast(low, i, "-->")
		case bytes.HasPrefix(low[i:], []byte("<script")):
			i = skipPast(low, i, "</script>")
		case bytes.HasPrefix(low[i:], []byte("<style")):
			i = skipPast(low, i, "</style>")
		case b[i] == '<':
			i = skipPast(low, i, ">")
			out.WriteByte(' ')
		default:
			out.WriteByte(b[i])
			i++
		}
	}
	return collapse(html.UnescapeString(strings.ToValidUTF8(out.String(), "?")))
}

// skipPast is the index just past the first end in low from i, or len(low).
func skipPast(low []byte, i int, end string) int {
	if k := bytes.Index(low[i:], []byte(end)); k >= 0 {
		return i + k + len(end)
	}
	return len(low)
}

// collapse joins s's words with single spaces.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
