package broker

// The principal of an SSL client, as Kafka's DefaultKafkaPrincipalBuilder
// gives it: the subject of the client's certificate as Java's
// X500Principal.getName() writes it (RFC 2253), mapped by
// ssl.principal.mapping.rules (SslPrincipalMapper), User:<name>; a client
// without a certificate is User:ANONYMOUS.
//
// The rules' patterns are Java regular expressions run here by Go's regexp
// (RE2): the ones rules are written with (groups, classes, lazy and greedy
// quantifiers, anchors) mean the same; back-references and look-arounds do
// not compile and are refused at start.

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DefaultSSLPrincipalMappingRules is ssl.principal.mapping.rules' default.
const DefaultSSLPrincipalMappingRules = "DEFAULT"

// The grammar of ssl.principal.mapping.rules, SslPrincipalMapper's
// RULE_PATTERN and RULE_SPLITTER.
const sslRulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	sslRuleSplitter = regexp.MustCompile(`\s*(` + sslRulePattern + `)\s*(,\s*|$)`)
	sslRuleParser   = regexp.MustCompile(`^(?:` + sslRulePattern + `)`)
)

// SSLPrincipalMapper maps a certificate's distinguished name to a
// principal name by the first rule that applies.
type SSLPrincipalMapper struct {
	rules []sslRule
}

type sslRule struct {
	isDefault   bool
	pattern     *regexp.Regexp // the rule's pattern, for replaceAll
	whole       *regexp.Regexp // the same, anchored: Java's Matcher.matches
	replacement string
	lower       bool
	upper       bool
}

// ParseSSLPrincipalMappingRules reads rules as SslPrincipalMapper.fromRules
// does: comma-separated DEFAULT and RULE:pattern/replacement/[LU], empty
// rules ignored.
func ParseSSLPrincipalMappingRules(rules string) (*SSLPrincipalMapper, error) {
	var out []sslRule
	for _, m := range sslRuleSplitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		rule := m[1]
		g := sslRuleParser.FindStringSubmatchIndex(rule)
		if g == nil {
			return nil, fmt.Errorf("invalid rule: %s", rule)
		}
		if g[1] != len(rule) {
			return nil, fmt.Errorf("invalid rule: `%s`, unmatched substring: `%s`", rule, rule[g[1]:])
		}
		group := func(i int) (string, bool) {
			if g[2*i] < 0 {
				return "", false
			}
			return rule[g[2*i]:g[2*i+1]], true
		}
		if _, ok := group(1); ok {
			out = append(out, sslRule{isDefault: true})
			continue
		}
		pattern, ok := group(2)
		if !ok {
			continue // an empty rule
		}
		replacement, _ := group(4)
		flag, _ := group(6)
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("invalid rule: %s: pattern %q: %w", rule, pattern, err)
		}
		whole := regexp.MustCompile(`^(?:` + pattern + `)$`)
		out = append(out, sslRule{pattern: re, whole: whole, replacement: replacement, lower: flag == "L", upper: flag == "U"})
	}
	return &SSLPrincipalMapper{rules: out}, nil
}

// errNoMatchingRule is a distinguished name no rule maps, as Kafka's
// NoMatchingRule: the client is refused.
var errNoMatchingRule = errors.New("no rules apply")

// Name is the principal name of distinguished name dn.
func (m *SSLPrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if name, ok := r.apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w to %s, rules %s", errNoMatchingRule, dn, m)
}

func (r sslRule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.whole.MatchString(dn) {
		return "", false
	}
	var b strings.Builder
	last := 0
	for _, m := range r.pattern.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:m[0]])
		b.WriteString(javaReplacement(r.replacement, dn, m))
		last = m[1]
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true
}

// javaReplacement expands replacement for match m of s as Java's
// Matcher.appendReplacement does, after SslPrincipalMapper's
// escapeLiteralBackReferences: \c is c; $n refers to group n, taking more
// digits while they still name a group; a $n naming no group is literal.
func javaReplacement(replacement, s string, m []int) string {
	groups := len(m)/2 - 1
	var b strings.Builder
	for i := 0; i < len(replacement); i++ {
		c := replacement[i]
		switch {
		case c == '\\' && i+1 < len(replacement):
			i++
			b.WriteByte(replacement[i])
		case c == '$' && i+1 < len(replacement) && replacement[i+1] >= '1' && replacement[i+1] <= '9':
			j := i + 2
			n := int(replacement[i+1] - '0')
			for j < len(replacement) && replacement[j] >= '0' && replacement[j] <= '9' {
				next := n*10 + int(replacement[j]-'0')
				if next > groups {
					break
				}
				n, j = next, j+1
			}
			if n > groups {
				b.WriteByte(c)
				continue
			}
			if m[2*n] >= 0 {
				b.WriteString(s[m[2*n]:m[2*n+1]])
			}
			i = j - 1
		case c == '$' && i+1 < len(replacement) && replacement[i+1] == '0' && groups > 0:
			b.WriteString(s[m[0]:m[1]])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// String lists the rules as SslPrincipalMapper.toString does.
func (m *SSLPrincipalMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		if r.isDefault {
			parts[i] = "DEFAULT"
			continue
		}
		s := "RULE:" + r.pattern.String() + "/" + r.replacement
		switch {
		case r.lower:
			s += "/L"
		case r.upper:
			s += "/U"
		}
		parts[i] = s
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// rfc2253Keywords are the attribute types Java's X500Principal.getName()
// writes by keyword; others it writes as a dotted OID with the value's DER
// in hex.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// SubjectDN is cert's subject as Java's X500Principal.getName() writes it:
// RFC 2253, the most specific RDN first.
func SubjectDN(cert *x509.Certificate) (string, error) {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil {
		return "", fmt.Errorf("certificate subject: %w", err)
	} else if len(rest) > 0 {
		return "", errors.New("certificate subject: trailing data")
	}
	// The values again, undecoded, for those written in hex.
	var rawSeq []asn1.RawValue
	if _, err := asn1.Unmarshal(cert.RawSubject, &rawSeq); err != nil {
		return "", fmt.Errorf("certificate subject: %w", err)
	}
	var rdns []string
	for i := len(seq) - 1; i >= 0; i-- {
		var set []struct {
			Type  asn1.ObjectIdentifier
			Value asn1.RawValue
		}
		if _, err := asn1.UnmarshalWithParams(rawSeq[i].FullBytes, &set, "set"); err != nil {
			return "", fmt.Errorf("certificate subject: %w", err)
		}
		var avas []string
		for j, atv := range seq[i] {
			keyword, known := rfc2253Keywords[atv.Type.String()]
			value, isString := atv.Value.(string)
			switch {
			case known && isString:
				avas = append(avas, keyword+"="+escapeRFC2253(value))
			case known:
				avas = append(avas, keyword+"=#"+hex.EncodeToString(set[j].Value.FullBytes))
			default:
				avas = append(avas, atv.Type.String()+"=#"+hex.EncodeToString(set[j].Value.FullBytes))
			}
		}
		rdns = append(rdns, strings.Join(avas, "+"))
	}
	return strings.Join(rdns, ","), nil
}

// escapeRFC2253 escapes a value as Java's AVA.toRFC2253String: the special
// characters ,=+<>#;"\ with a backslash, and a leading or trailing space.
func escapeRFC2253(v string) string {
	var b strings.Builder
	for i, c := range v {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == ' ' && (i == 0 || i == len(v)-1):
			b.WriteString(`\ `)
		case c < 0x20:
			b.WriteString(`\` + strconv.FormatInt(int64(c)|0x100, 16)[1:])
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
