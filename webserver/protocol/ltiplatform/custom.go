package ltiplatform

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ltiop/ltiop/webserver/protocol/apierr"
)

// Limits of custom parameters, for a tool's spec.custom (the CRD holds the same markers)
// and for the custom parameters of one launch.
const (
	MaxCustomEntries  = 64
	MaxCustomKeyBytes = 128
	MaxCustomValue    = 1024 // characters
)

// ValidCustomKey reports whether k is 1 to 128 ASCII letters, digits, '_', '.' or '-': the
// names every LMS accepts (LTI 1.1 form fields become custom_<key>).
func ValidCustomKey(k string) bool {
	if k == "" || len(k) > MaxCustomKeyBytes {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// CheckCustom validates custom parameters; the error names the first bad key (in sorted
// order, so the same map always gets the same answer) under field.
func CheckCustom(field string, m map[string]string) *apierr.Error {
	if len(m) > MaxCustomEntries {
		return fieldError(field, "at most %d custom parameters", MaxCustomEntries)
	}
	var first *apierr.Error
	firstKey := ""
	for k, v := range m { // the smallest bad key, without sorting: this runs on every launch
		if e := checkCustomEntry(field, k, v); e != nil && (first == nil || k < firstKey) {
			first, firstKey = e, k
		}
	}
	return first
}

func checkCustomEntry(field, k, v string) *apierr.Error {
	if !ValidCustomKey(k) {
		shown := k
		if len(shown) > MaxCustomKeyBytes { // the description quotes the key: not all of a huge one
			shown = strings.ToValidUTF8(shown[:MaxCustomKeyBytes], "") + "…"
		}
		return fieldError(field, "key %q: must be 1 to %d letters, digits, '_', '.' or '-'", shown, MaxCustomKeyBytes)
	}
	if utf8.RuneCountInString(v) > MaxCustomValue || !validText(v, 4*MaxCustomValue) {
		return fieldError(fmt.Sprintf("%s.%s", field, k), "must be at most %d characters of text", MaxCustomValue)
	}
	return nil
}

// Variables are the values of one launch that substitution variables stand for (LTI 1.3
// core, custom property substitution; the names of the LTI 1.1 variable vocabulary).
type Variables struct {
	UserID       string
	User         *User
	Context      *Context
	ResourceLink *ResourceLink
}

// Lookup returns the value of the variable name (without its '$'), and false when the name
// is not one ltiop knows or the launch has no value for it.
func (v *Variables) Lookup(name string) (string, bool) {
	u, c, rl := v.user(), v.Context, v.ResourceLink
	if c == nil {
		c = &noContext
	}
	if rl == nil {
		rl = &noResourceLink
	}
	var s string
	switch name {
	case "User.id":
		s = v.UserID
	case "User.username":
		s = u.Username
	case "User.image":
		s = u.Picture
	case "Person.name.full":
		s = u.Name
	case "Person.name.given":
		s = u.GivenName
	case "Person.name.family":
		s = u.FamilyName
	case "Person.name.middle":
		s = u.MiddleName
	case "Person.email.primary":
		s = u.Email
	case "Membership.role":
		s = strings.Join(u.Roles, ",")
	case "Context.id":
		s = c.ID
	case "Context.label":
		s = c.Label
	case "Context.title":
		s = c.Title
	case "Context.type":
		s = strings.Join(c.Type, ",")
	case "ResourceLink.id":
		s = rl.ID
	case "ResourceLink.title":
		s = rl.Title
	case "ResourceLink.description":
		s = rl.Description
	}
	return s, s != ""
}

// Stand-ins for what a launch lacks: their fields are empty, so their variables stay.
var (
	noUser         User
	noContext      Context
	noResourceLink ResourceLink
)

func (v *Variables) user() *User {
	if v.User == nil {
		return &noUser
	}
	return v.User
}

// MergeCustom returns the custom claim of a launch: the tool's parameters under the
// launch's own (the launch wins on a shared key), and every value that is exactly "$" and
// the name of a variable the launch has a value for replaced by that value. Other values,
// unknown variables and variables without a value are sent as written, as LMSs do. Values
// of both maps are expanded: the launch's are the link's own parameters (a deep-linking
// item's custom may hold variables too). Neither map is modified; nil when both are empty.
func MergeCustom(tool, launch map[string]string, v *Variables) map[string]string {
	if len(tool) == 0 && len(launch) == 0 {
		return nil
	}
	out := make(map[string]string, len(tool)+len(launch))
	for _, m := range [2]map[string]string{tool, launch} {
		for k, val := range m {
			if len(val) > 1 && val[0] == '$' {
				if s, ok := v.Lookup(val[1:]); ok {
					val = s
				}
			}
			out[k] = val
		}
	}
	return out
}
