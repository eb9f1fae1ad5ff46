package dynreg

import (
	"strings"
	"testing"
)

func TestClosingPageT_DR_07(t *testing.T) {
	page, err := ClosingPage("Registered <b>Quiz</b> & co.", "n0nce+/=")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"(window.opener || window.parent).postMessage({subject: 'org.imsglobal.lti.close'}, '*');",
		`<script nonce="n0nce&#43;/=">`,
		"Registered &lt;b&gt;Quiz&lt;/b&gt; &amp; co.",
		"<!doctype html>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<b>") {
		t.Error("message not escaped")
	}
	if !strings.Contains(page, CloseSubject) {
		t.Error("no close subject")
	}
}

func TestClosingPageT_DR_07Injection(t *testing.T) {
	page, err := ClosingPage("</p><script>alert(1)</script>", `x" onload="alert(1)`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(page, "<script") != 1 || strings.Contains(page, `" onload="`) {
		t.Errorf("injection through the message or the nonce:\n%s", page)
	}
}

func TestClosingPageT_DR_07WithoutNonce(t *testing.T) {
	page, err := ClosingPage("Done", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, "nonce") || !strings.Contains(page, "<script>\n(window.opener || window.parent)") {
		t.Errorf("page:\n%s", page)
	}
}
