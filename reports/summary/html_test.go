package summary

import (
	"strings"
	"testing"

	"github.com/glmbench/glmbench/reports/schema"
)

// nginx's own error page (src/http/ngx_http_special_response.c), CRLF and all.
const nginx502 = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"

// cloudflare502 is the start of Cloudflare's 5xx page as quoted in public
// reports: four lines of IE conditional comments, then the title, past
// the 200 bytes a record keeps.
const cloudflare502 = "<!DOCTYPE html>\n" +
	`<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> <![endif]-->` + "\n" +
	`<!--[if IE 7]>    <html class="no-js ie7 oldie" lang="en-US"> <![endif]-->` + "\n" +
	`<!--[if IE 8]>    <html class="no-js ie8 oldie" lang="en-US"> <![endif]-->` + "\n" +
	`<!--[if gt IE 8]><!--> <html class="no-js" lang="en-US"> <!--<![endif]-->` + "\n" +
	"<head>\n\n<title>api.example.com | 502: Bad gateway</title>\n<meta charset=\"UTF-8\" />\n" +
	"<style>" + "body{margin:0}" + "</style></head><body><div>Cloudflare Ray ID: 8f1c</div></body></html>"

func TestHTMLPageWordsAPageByItsTitleOrText(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"nginx's 502 by its title":                  {nginx502, "502 Bad Gateway (an HTML page)"},
		"Cloudflare's 502 by its title":             {cloudflare502, "api.example.com | 502: Bad gateway (an HTML page)"},
		"Cloudflare's page cut before its title":    {cloudflare502[:200], "an HTML page"},
		"entities are decoded, white space folded":  {"<HTML><TITLE>\n  Service &amp; \t gateway\n</TITLE>", "Service & gateway (an HTML page)"},
		"a title cut short is read to the cut":      {"<html><head><title>504 Gateway Time", "504 Gateway Time (an HTML page)"},
		"no title: the text, not scripts or styles": {"<html><head><style>p{}</style><script>var k=1</script></head><body><p>no healthy</p><p>upstream</p></body></html>", "no healthy upstream (an HTML page)"},
		"a byte order mark and blank lines first":   {"\xEF\xBB\xBF\r\n  <!doctype html><title>Sign in</title>", "Sign in (an HTML page)"},
		"a comment before the html tag":             {"<!-- edge 7 --><html><title>Blocked</title></html>", "Blocked (an HTML page)"},
		"a control character is shown as ?":         {"<title>a\x1b[2Jb</title>", "a?[2Jb (an HTML page)"},
	} {
		got, ok := HTMLPage([]byte(tc.body))
		if !ok || got != tc.want {
			t.Errorf("%s: HTMLPage = %q, %v; want %q", name, got, ok, tc.want)
		}
		if !strings.Contains(ErrorMessage([]byte(tc.body)), strings.TrimSuffix(tc.want, " "+HTMLSuffix)) {
			t.Errorf("%s: ErrorMessage = %q, want HTMLPage's words", name, ErrorMessage([]byte(tc.body)))
		}
	}
	// A giant title is clipped: a message is one line, not a page.
	if got, _ := HTMLPage([]byte("<title>" + strings.Repeat("x", 5000) + "</title>")); len(got) > htmlMessageLimit+len(" "+HTMLSuffix)+len("…") {
		t.Errorf("a 5000-byte title gave a %d-byte message", len(got))
	}
	for _, notPage := range []string{`{"error":{"message":"<html>"}}`, `<?xml version="1.0"?><Error><Code>AccessDenied</Code></Error>`, "Internal Server Error", "", "<b>bold</b>"} {
		if got, ok := HTMLPage([]byte(notPage)); ok {
			t.Errorf("HTMLPage(%q) = %q, true; want no page", notPage, got)
		}
	}
}

// A Cloudflare page's record keeps 200 bytes, before its title: error
// kinds take the title from the client's detail, which read further.
func TestErrorKindOfAnHTMLPageNamesItsTitle(t *testing.T) {
	for name, tc := range map[string]struct {
		rec  schema.Record
		want string
	}{
		"nginx: the body's title": {schema.Record{Class: schema.HTTP5xx, Status: 502, Detail: "HTTP 502: 502 Bad Gateway (an HTML page)", Body: nginx502[:min(200, len(nginx502))]},
			"HTTP 502: 502 Bad Gateway (an HTML page)"},
		"Cloudflare: the detail's title": {schema.Record{Class: schema.HTTP5xx, Status: 502, Detail: "HTTP 502: api.example.com | 502: Bad gateway (an HTML page)", Body: cloudflare502[:200]},
			"HTTP 502: api.example.com | 502: Bad gateway (an HTML page)"},
		"no title anywhere": {schema.Record{Class: schema.HTTP5xx, Status: 504, Detail: "HTTP 504", Body: cloudflare502[:200]},
			"HTTP 504: an HTML page"},
	} {
		if got := ErrorKind(&tc.rec); got != tc.want {
			t.Errorf("%s: ErrorKind = %q, want %q", name, got, tc.want)
		}
	}
}
