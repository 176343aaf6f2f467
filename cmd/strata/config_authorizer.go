package main

import (
	"strings"

	"github.com/strata-io/strata/broker"
)

// standardAuthorizerClass is the one authorizer.class.name Strata serves:
// Kafka's KRaft authorizer, its ACLs in the cluster metadata.
const standardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// loadAuthorizerSettings reads authorizer.class.name and, for the
// StandardAuthorizer, super.users and allow.everyone.if.no.acl.found, as
// StandardAuthorizer.configure does: super.users split at ';', each
// trimmed, an empty one skipped, every other of the form Type:name. The
// two are ignored without the authorizer, as in Kafka.
func loadAuthorizerSettings(p *propReader, s *settings) {
	class, _ := p.get("authorizer.class.name")
	switch {
	case p.err != nil || class == "":
		return
	case class != standardAuthorizerClass:
		p.fail("authorizer.class.name", p.props["authorizer.class.name"], "strata serves only "+standardAuthorizerClass)
		return
	}
	a := &broker.StandardAuthorizerConfig{}
	if v, ok := p.get("super.users"); ok {
		for _, u := range strings.Split(v, ";") {
			u = strings.TrimSpace(u)
			if u == "" {
				continue
			}
			if !strings.Contains(u, ":") {
				p.fail("super.users", p.props["super.users"], "expected a string in format principalType:principalName but got "+u)
				return
			}
			a.SuperUsers = append(a.SuperUsers, u)
		}
	}
	p.boolean(&a.AllowEveryoneIfNoACL, "allow.everyone.if.no.acl.found")
	s.Authorizer = a
}
