package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestRegexErrorsAreRE2J: a regex is refused or taken as re2j 1.8 (Kafka
// 4.4's) compiles it, with its description in Kafka's message; the table
// is what com.google.re2j.Pattern.compile answered for each pattern.
func TestRegexErrorsAreRE2J(t *testing.T) {
	for _, c := range []struct{ regex, want string }{
		{"a(b", "missing closing )"},
		{"a)b", "regexp/syntax: internal error"},
		{"*a", "missing argument to repetition operator"},
		{"a**", "invalid nested repetition operator"},
		{"a++", "invalid nested repetition operator"},
		{"[a", "missing closing ]"},
		{"a{1001}", "invalid repeat count"},
		{"x{2,1}", "invalid repeat count"},
		{`\8`, "invalid escape sequence"},
		{`(a)\1`, "invalid escape sequence"},
		{`\C`, "invalid escape sequence"},
		{`\xZZ`, "invalid escape sequence"},
		{"(?=x)", "invalid or unsupported Perl syntax"},
		{"(?i", "invalid or unsupported Perl syntax"},
		{"(?z)", "invalid or unsupported Perl syntax"},
		{"[z-a]", "invalid character class range"},
		{`\p{Foo}`, "invalid character class range"},
		{"[[:foo:]]", "invalid character class range"},
		{"(?P<n>a)(?P<n>b)", "duplicate capture group name"},
		{"(?P<>a)", "invalid named capture"},
		{`a\`, "trailing backslash at end of expression"},
		{"(?<n>a)", ""}, {`\Qa.b\E`, ""}, {"a{,3}", ""}, {"x{1000}", ""}, {`\z`, ""}, {"(?s).", ""}, {`[\d-z]`, ""},
	} {
		resp := regexError(c.regex)
		switch {
		case c.want == "" && resp != nil:
			t.Errorf("%s refused (%s), re2j takes it", c.regex, *resp.ErrorMessage)
		case c.want == "":
		case resp == nil:
			t.Errorf("%s taken, re2j refuses it: %s", c.regex, c.want)
		case resp.ErrorCode != kerr.InvalidRegularExpression.Code ||
			*resp.ErrorMessage != "SubscribedTopicRegex `"+c.regex+"` is not a valid regular expression: "+c.want+".":
			t.Errorf("%s: error %d %q, want INVALID_REGULAR_EXPRESSION with re2j's %q", c.regex, resp.ErrorCode, *resp.ErrorMessage, c.want)
		}
	}
	// As re2j's matcher(topic).matches(): the whole name.
	re, err := compileRegex("t.*|x")
	if err != nil || re.MatchString("at1") || !re.MatchString("t1") || re.MatchString("xx") || !re.MatchString("x") {
		t.Errorf("t.*|x must match t1 and x only, as a whole name (%v)", err)
	}
}
