package broker

// Kafka's StandardAuthorizer
// (authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer):
// its decisions on the ACLs of this node's metadata image
// (metadata.StandardAuthorizer), so an ACL the controller committed is
// enforced on every node once its image has it, as Kafka's brokers
// enforce the AclsImage they replayed. The ACL APIs (acls.go) then create,
// list and delete them.

import "github.com/strata-io/strata/metadata"

// StandardAuthorizerConfig is the StandardAuthorizer's configuration.
type StandardAuthorizerConfig struct {
	// SuperUsers (super.users) may do anything, whatever the ACLs say.
	SuperUsers []string
	// AllowEveryoneIfNoACL (allow.everyone.if.no.acl.found) allows what
	// no ACL of the resource speaks of; by default it is denied.
	AllowEveryoneIfNoACL bool
}

// standardAuthorizer decides on the current image of meta.
type standardAuthorizer struct {
	rules metadata.StandardAuthorizer
	meta  metadata.Store
}

func newStandardAuthorizer(cfg *StandardAuthorizerConfig, meta metadata.Store) *standardAuthorizer {
	a := &standardAuthorizer{rules: metadata.StandardAuthorizer{SuperUsers: map[string]bool{}, AllowEveryoneIfNoACL: cfg.AllowEveryoneIfNoACL}, meta: meta}
	for _, p := range cfg.SuperUsers {
		a.rules.SuperUsers[p] = true
	}
	return a
}

func (a *standardAuthorizer) Authorize(principal, host string, op Operation, resource ResourceType, name string) bool {
	return a.rules.Authorize(&a.meta.Image().Access.ACLs, principal, host, op, resource, name)
}

func (a *standardAuthorizer) AuthorizeByResourceType(principal, host string, op Operation, resource ResourceType) bool {
	return a.rules.AuthorizeByResourceType(&a.meta.Image().Access.ACLs, principal, host, op, resource)
}
