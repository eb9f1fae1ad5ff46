package lti

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func wantItemError(t *testing.T, e *ContentItemError, index int, field string) {
	t.Helper()
	if e == nil {
		t.Fatalf("no error, want contentItems[%d] %q", index, field)
	}
	if e.Index != index || e.Field != field {
		t.Fatalf("error %q (index %d, field %q), want index %d, field %q", e, e.Index, e.Field, index, field)
	}
}

func TestDeepLinkingT_DL_04_AcceptTypes(t *testing.T) {
	const ext = "https://www.example.com/custom_type"
	cases := []struct {
		name   string
		accept []any
		item   ContentItem
		ok     bool
	}{
		{"exact", []any{"ltiResourceLink"}, dlResourceLink(), true},
		{"LtiResourceLink", []any{"LtiResourceLink"}, dlResourceLink(), true},
		{"ltiresourcelink", []any{"link", "ltiresourcelink"}, dlResourceLink(), true},
		{"LTIRESOURCELINK with spaces", []any{" LTIRESOURCELINK "}, dlResourceLink(), true},
		{"not accepted", []any{"link", "file"}, dlResourceLink(), false},
		{"link refused by a resource-link-only platform", []any{"ltiResourceLink"}, dlLink("https://tool.example.com/a"), false},
		{"empty accept_types", []any{}, dlLink("https://tool.example.com/a"), false},
		{"extension type accepted", []any{ext}, ContentItem{Type: ext}, true},
		{"extension type matched exactly", []any{strings.ToUpper(ext)}, ContentItem{Type: ext}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dlRequest(t, func(s map[string]any) { s["accept_types"] = tc.accept })
			e := ValidateContentItems([]ContentItem{tc.item}, c.DeepLinking)
			_, _, err := DeepLinkingResponse(dlParams(c, tc.item))
			if tc.ok {
				if e != nil || err != nil {
					t.Fatalf("refused: %v / %v", e, err)
				}
				return
			}
			wantItemError(t, e, 0, "type")
			if e.Rule != "T-DL-04" {
				t.Errorf("rule %q", e.Rule)
			}
			var ce *ContentItemError
			if !errors.As(err, &ce) || ce.Rule != "T-DL-04" {
				t.Errorf("DeepLinkingResponse error %v, want the T-DL-04 *ContentItemError", err)
			}
		})
	}
	t.Run("comma-separated string", func(t *testing.T) {
		c := dlRequest(t, func(s map[string]any) { s["accept_types"] = "link, LtiResourceLink" })
		if e := ValidateContentItems([]ContentItem{dlResourceLink()}, c.DeepLinking); e != nil {
			t.Fatal(e)
		}
	})
}

func TestDeepLinkingT_DL_05_AcceptMultiple(t *testing.T) {
	two := []ContentItem{dlLink("https://tool.example.com/a"), dlLink("https://tool.example.com/b")}
	for _, tc := range []struct {
		name     string
		multiple any // nil: absent
		items    []ContentItem
		ok       bool
	}{
		{"false, two items", false, two, false},
		{"\"false\", two items", "false", two, false},
		{"absent, two items", nil, two, false},
		{"true, two items", true, two, true},
		{"false, one item", false, two[:1], true},
		{"false, no item", false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dlRequest(t, func(s map[string]any) {
				delete(s, "accept_multiple")
				if tc.multiple != nil {
					s["accept_multiple"] = tc.multiple
				}
			})
			e := ValidateContentItems(tc.items, c.DeepLinking)
			if tc.ok {
				if e != nil {
					t.Fatal(e)
				}
				return
			}
			wantItemError(t, e, 1, "")
			if e.Rule != "T-DL-05" || !strings.HasPrefix(e.Error(), "contentItems[1]: ") {
				t.Errorf("error %q rule %q", e, e.Rule)
			}
			if _, _, err := DeepLinkingResponse(dlParams(c, tc.items...)); err == nil {
				t.Error("DeepLinkingResponse signed two items for a single-item platform")
			}
		})
	}
}

func TestDeepLinkingT_DL_06_AcceptLineItem(t *testing.T) {
	graded := dlResourceLink()
	graded.LineItem = &ContentLineItem{ScoreMaximum: 100, Label: "Quiz 12"}
	for _, tc := range []struct {
		name   string
		accept any
		item   ContentItem
		ok     bool
	}{
		{"false with lineItem", false, graded, false},
		{"\"false\" with lineItem", "false", graded, false},
		{"absent with lineItem", nil, graded, true},
		{"true with lineItem", true, graded, true},
		{"false without lineItem", false, dlResourceLink(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dlRequest(t, func(s map[string]any) {
				if tc.accept != nil {
					s["accept_lineitem"] = tc.accept
				}
			})
			e := ValidateContentItems([]ContentItem{tc.item}, c.DeepLinking)
			if tc.ok {
				if e != nil {
					t.Fatal(e)
				}
				return
			}
			wantItemError(t, e, 0, "lineItem")
			if e.Rule != "T-DL-06" {
				t.Errorf("rule %q", e.Rule)
			}
		})
	}
}

func TestValidateContentItemsRules(t *testing.T) {
	ok := dlLink("https://tool.example.com/a")
	cases := []struct {
		name  string
		item  ContentItem
		field string // "" with ok: valid
		ok    bool
	}{
		{"link", ok, "", true},
		{"no type", ContentItem{URL: "https://a.example"}, "type", false},
		{"unknown type", ContentItem{Type: "video", URL: "https://a.example"}, "type", false},
		{"case variant type", ContentItem{Type: "LtiResourceLink"}, "type", false},
		{"link without url", ContentItem{Type: "link"}, "url", false},
		{"file without url", ContentItem{Type: "file"}, "url", false},
		{"image without url", ContentItem{Type: "image"}, "url", false},
		{"html without html", ContentItem{Type: "html", Title: "x"}, "html", false},
		{"html", ContentItem{Type: "html", HTML: "<h1>x</h1>"}, "", true},
		{"ltiResourceLink without url", ContentItem{Type: "ltiResourceLink"}, "", true},
		{"extension type", ContentItem{Type: "https://www.example.com/custom_type"}, "", true},
		{"relative url", dlLink("/a"), "url", false},
		{"javascript url", dlLink("javascript:alert(1)"), "url", false},
		{"ftp url", dlLink("ftp://a.example/x"), "url", false},
		{"url with space", dlLink("https://a.example/a b"), "url", false},
		{"url without host", dlLink("https:///x"), "url", false},
		{"http url", dlLink("http://a.example/x"), "", true},
		{"resource link bad url", ContentItem{Type: "ltiResourceLink", URL: "tool/launch"}, "url", false},
		{"icon without url", ContentItem{Type: "link", URL: "https://a.example", Icon: &Image{Width: 1}}, "icon.url", false},
		{"icon bad url", ContentItem{Type: "link", URL: "https://a.example", Icon: &Image{URL: "x.png"}}, "icon.url", false},
		{"icon negative width", ContentItem{Type: "link", URL: "https://a.example", Icon: &Image{URL: "https://a.example/i.png", Width: -1}}, "icon.width", false},
		{"thumbnail negative height", ContentItem{Type: "link", URL: "https://a.example", Thumbnail: &Image{URL: "https://a.example/t.png", Height: -5}}, "thumbnail.height", false},
		{"thumbnail bad url", ContentItem{Type: "link", URL: "https://a.example", Thumbnail: &Image{URL: "data:image/png;base64,AAAA"}}, "thumbnail.url", false},
		{"embed without html", ContentItem{Type: "link", URL: "https://a.example", Embed: &Embed{}}, "embed.html", false},
		{"window negative width", ContentItem{Type: "link", URL: "https://a.example", Window: &Window{Width: -1}}, "window.width", false},
		{"window", ContentItem{Type: "link", URL: "https://a.example", Window: &Window{TargetName: "x", WindowFeatures: "menubar=no"}}, "", true},
		{"link iframe without src", ContentItem{Type: "link", URL: "https://a.example", Iframe: &Iframe{Width: 560}}, "iframe.src", false},
		{"iframe bad src", ContentItem{Type: "link", URL: "https://a.example", Iframe: &Iframe{Src: "javascript:x"}}, "iframe.src", false},
		{"iframe negative height", ContentItem{Type: "link", URL: "https://a.example", Iframe: &Iframe{Src: "https://a.example/e", Height: -1}}, "iframe.height", false},
		{"resource link iframe dimensions only", ContentItem{Type: "ltiResourceLink", Iframe: &Iframe{Height: 890}}, "", true},
		{"image negative width", ContentItem{Type: "image", URL: "https://a.example/i.png", Width: -1}, "width", false},
		{"image negative height", ContentItem{Type: "image", URL: "https://a.example/i.png", Height: -1}, "height", false},
		{"image dimensions", ContentItem{Type: "image", URL: "https://a.example/i.png", Width: 0, Height: 10}, "", true},
		{"lineItem without scoreMaximum", ContentItem{Type: "ltiResourceLink", LineItem: &ContentLineItem{Label: "x"}}, "lineItem.scoreMaximum", false},
		{"lineItem negative scoreMaximum", ContentItem{Type: "ltiResourceLink", LineItem: &ContentLineItem{ScoreMaximum: -1}}, "lineItem.scoreMaximum", false},
		{"lineItem decimal scoreMaximum", ContentItem{Type: "ltiResourceLink", LineItem: &ContentLineItem{ScoreMaximum: 0.5, GradesReleased: ptr(false)}}, "", true},
		{"available start not RFC 3339", ContentItem{Type: "ltiResourceLink", Available: &TimeWindow{StartDateTime: "2018-02-06"}}, "available.startDateTime", false},
		{"available end not a date", ContentItem{Type: "ltiResourceLink", Available: &TimeWindow{EndDateTime: "tomorrow"}}, "available.endDateTime", false},
		{"available end before start", ContentItem{Type: "ltiResourceLink", Available: &TimeWindow{StartDateTime: "2018-03-07T20:05:02Z", EndDateTime: "2018-02-06T20:05:02Z"}}, "available.endDateTime", false},
		{"submission end not RFC 3339", ContentItem{Type: "ltiResourceLink", Submission: &TimeWindow{EndDateTime: "2018-03-06 20:05:02"}}, "submission.endDateTime", false},
		{"submission with offset and fraction", ContentItem{Type: "ltiResourceLink", Submission: &TimeWindow{StartDateTime: "2024-09-25T13:00:00.000Z", EndDateTime: "2024-10-25T15:00:00+02:00"}}, "", true},
		{"expiresAt not RFC 3339", ContentItem{Type: "file", URL: "https://a.example/f.pdf", ExpiresAt: "03/06/2018"}, "expiresAt", false},
		{"expiresAt", ContentItem{Type: "file", URL: "https://a.example/f.pdf", ExpiresAt: "2018-03-06T20:05:02Z", MediaType: "application/pdf"}, "", true},
		{"extension URL key", ContentItem{Type: "image", URL: "https://a.example/i.png", Extensions: map[string]json.RawMessage{"https://www.example.com/resourceMetadata": json.RawMessage(`{"license":"CCBY4.0"}`)}}, "", true},
		{"extension plain key on a standard type", ContentItem{Type: "image", URL: "https://a.example/i.png", Extensions: map[string]json.RawMessage{"license": json.RawMessage(`"x"`)}}, "license", false},
		{"extension invalid JSON", ContentItem{Type: "image", URL: "https://a.example/i.png", Extensions: map[string]json.RawMessage{"https://x.example/m": json.RawMessage(`{`)}}, "https://x.example/m", false},
		{"extension named like a member", ContentItem{Type: "https://x.example/t", Extensions: map[string]json.RawMessage{"URL": json.RawMessage(`"x"`)}}, "URL", false},
		{"extension type with plain members", ContentItem{Type: "https://x.example/t", Extensions: map[string]json.RawMessage{"data": json.RawMessage(`"x"`)}}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Intrinsic rules hold with and without settings; the item is second so
			// that the index is checked.
			for _, settings := range []*DeepLinkingSettings{nil, {AcceptTypes: []string{"link", "ltiResourceLink", "file", "html", "image", tc.item.Type}, AcceptMultiple: ptr(true)}} {
				e := ValidateContentItems([]ContentItem{ok, tc.item}, settings)
				if tc.ok {
					if e != nil {
						t.Fatalf("refused: %v", e)
					}
					continue
				}
				wantItemError(t, e, 1, tc.field)
				if want := "contentItems[1]." + tc.field + ": "; !strings.HasPrefix(e.Error(), want) {
					t.Errorf("message %q, want prefix %q", e, want)
				}
			}
		})
	}
	if e := ValidateContentItems(nil, nil); e != nil {
		t.Errorf("no items: %v", e)
	}
	if got := (&ContentItemError{Index: 2, Field: "url", Message: "required for type link"}).Error(); got != "contentItems[2].url: required for type link" {
		t.Errorf("Error() = %q", got)
	}
}

func TestValidateOptions(t *testing.T) {
	for _, o := range []DeepLinkingOptions{
		{}, {Message: "m"}, {Log: "l"}, {Message: "m", Log: "l"}, {ErrMessage: "e"}, {ErrLog: "e"}, {ErrMessage: "e", ErrLog: "l"},
	} {
		if err := ValidateOptions(o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, o := range []DeepLinkingOptions{
		{Message: "m", ErrMessage: "e"}, {Log: "l", ErrLog: "e"}, {Message: "m", ErrLog: "e"}, {Log: "l", ErrMessage: "e"},
	} {
		err := ValidateOptions(o)
		var ce *ContentItemError
		if !errors.As(err, &ce) || ce.Index != -1 || ce.Field != "options" {
			t.Errorf("%+v: %v, want an options error", o, err)
			continue
		}
		p := dlParams(dlRequest(t, nil))
		p.Options = o
		if _, _, err := DeepLinkingResponse(p); err == nil {
			t.Errorf("%+v: DeepLinkingResponse accepted it", o)
		}
	}
}
