package broker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"testing"
	"time"
)

// The cases of Kafka's SslPrincipalMapperTest.

func TestSSLPrincipalRulesValid(t *testing.T) {
	for _, rules := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := ParseSSLPrincipalMappingRules(rules); err != nil {
			t.Errorf("%q: %v", rules, err)
		}
	}
}

func TestSSLPrincipalRulesInvalid(t *testing.T) {
	for _, rules := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
	} {
		if m, err := ParseSSLPrincipalMappingRules(rules); err == nil {
			t.Errorf("%q: accepted as %s", rules, m)
		}
	}
}

func TestSSLPrincipalMapper(t *testing.T) {
	m, err := ParseSSLPrincipalMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, " +
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, " +
		"DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestSSLPrincipalNoMatchingRule(t *testing.T) {
	m, err := ParseSSLPrincipalMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name("CN=eve,OU=Guests"); err == nil {
		t.Errorf("Name = %q, want no matching rule", got)
	}
}

func TestSSLPrincipalRulesSplitting(t *testing.T) {
	for rules, want := range map[string]string{
		"":                               "[]",
		"DEFAULT":                        "[DEFAULT]",
		"RULE://":                        "[RULE:/]",
		"RULE:/.*/":                      "[RULE:/.*]",
		"RULE:/.*/L":                     "[RULE:/.*/L]",
		"RULE://,DEFAULT":                "[RULE:/, DEFAULT]",
		"  RULE:// ,  DEFAULT  ":         "[RULE:/, DEFAULT]",
		"  RULE:   /     / ,  DEFAULT  ": "[RULE:   /     , DEFAULT]",
		"  RULE:  /     /U   ,DEFAULT  ": "[RULE:  /     /U, DEFAULT]",
		"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ": "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
		",   , , ,      , , ,   ":                                "[]",
		",,RULE://,,,DEFAULT,,":                                  "[RULE:/, DEFAULT]",
		",  , RULE: /   /    ,,,   DEFAULT, ,   ":                "[RULE: /   , DEFAULT]",
		"     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,":             "[RULE:   /  /U, DEFAULT]",
		`RULE:\/\\\(\)\n\t/\/\//`:                                `[RULE:\/\\\(\)\n\t/\/\/]`,
		`RULE:\**\/+/*/L,RULE:\/*\**/**/`:                        `[RULE:\**\/+/*/L, RULE:\/*\**/**]`,
		`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`: `[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
	} {
		m, err := ParseSSLPrincipalMappingRules(rules)
		if err != nil {
			t.Errorf("%q: %v", rules, err)
			continue
		}
		if got := m.String(); got != want {
			t.Errorf("%q: rules %s, want %s", rules, got, want)
		}
	}
}

func TestSSLPrincipalCommaWithWhitespace(t *testing.T) {
	m, err := ParseSSLPrincipalMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Errorf("Name = %q, %v; want %q", got, err, `Tkac\, Adam`)
	}
}

// TestSubjectDN checks the subject as Java's X500Principal.getName()
// writes it (the wants are what Java 17 printed for the same certificates):
// most specific RDN first, RFC 2253 keywords, other types in hex, the
// special characters escaped.
func TestSubjectDN(t *testing.T) {
	oid := func(s ...int) asn1.ObjectIdentifier { return asn1.ObjectIdentifier(s) }
	for _, tc := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: oid(2, 5, 4, 6), Value: "US"},
			{Type: oid(2, 5, 4, 10), Value: "Acme, Inc."},
			{Type: oid(2, 5, 4, 11), Value: "eng"},
			{Type: oid(2, 5, 4, 3), Value: "alice"},
		}}, "CN=alice,OU=eng,O=Acme\\, Inc.,C=US"},
		{pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: oid(0, 9, 2342, 19200300, 100, 1, 25), Value: "com"},
			{Type: oid(2, 5, 4, 3), Value: " a=b+c#d;e<f>\"g\\ "},
			{Type: oid(1, 2, 840, 113549, 1, 9, 1), Value: "x@y.z"},
		}}, `1.2.840.113549.1.9.1=#0c057840792e7a,CN=\ a\=b\+c\#d\;e\<f\>\"g\\\ ,DC=com`},
		{pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: oid(2, 5, 4, 3), Value: "#x é"},
			{Type: oid(2, 5, 4, 5), Value: "1234"},
		}}, `2.5.4.5=#130431323334,CN=\#x é`},
		{pkix.Name{Country: []string{"US"}, Organization: []string{"O"}, CommonName: "bob", SerialNumber: "42"},
			`2.5.4.5=#13023432,CN=bob,O=O,C=US`},
	} {
		got, err := SubjectDN(selfSigned(t, tc.name))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("SubjectDN = %s, want %s", got, tc.want)
		}
	}
}

func selfSigned(t *testing.T, subject pkix.Name) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: subject, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
