package broker

// Authorization, where and as Kafka's KafkaApis does it: each handler asks
// its request's Authorizer before it acts, per resource named in the
// request, and answers what Kafka answers when refused (a
// *_AUTHORIZATION_FAILED code in the field Kafka sets, or, where Kafka
// filters, an answer without what may not be seen). With no Authorizer
// configured everything is allowed, so answers are those of an
// unsecured Kafka.
//
// Authorized operations (KIP-430) are reported when asked for, as
// Kafka's AuthHelper.authorizedOperations computes them: a bit (1 << the
// operation's code) for each operation of the resource type the Authorizer
// allows; without an Authorizer, all of them.

import (
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
)

// Operation is one of Kafka's ACL operations, by Kafka's code.
type Operation = metadata.ACLOperation

// Kafka's ACL operations the served APIs check.
const (
	OpRead            = metadata.ACLOpRead
	OpWrite           = metadata.ACLOpWrite
	OpCreate          = metadata.ACLOpCreate
	OpDelete          = metadata.ACLOpDelete
	OpAlter           = metadata.ACLOpAlter
	OpDescribe        = metadata.ACLOpDescribe
	OpClusterAction   = metadata.ACLOpClusterAction
	OpDescribeConfigs = metadata.ACLOpDescribeConfigs
	OpAlterConfigs    = metadata.ACLOpAlterConfigs
	OpIdempotentWrite = metadata.ACLOpIdempotentWrite
)

// ResourceType is one of Kafka's ACL resource types, by Kafka's code.
type ResourceType = metadata.ACLResourceType

// Kafka's resource types the served APIs check.
const (
	ResourceTopic           = metadata.ACLResourceTopic
	ResourceGroup           = metadata.ACLResourceGroup
	ResourceCluster         = metadata.ACLResourceCluster
	ResourceTransactionalID = metadata.ACLResourceTransactionalID
)

// clusterName is the name of the one CLUSTER resource, as in Kafka.
const clusterName = "kafka-cluster"

// Authorizer decides whether principal (Kafka's KafkaPrincipal string
// form, e.g. User:alice), connected from host (the client's IP address,
// as Kafka's clientAddress().getHostAddress()), may perform op on the
// named resource. It is called from every connection's goroutine at once.
type Authorizer interface {
	Authorize(principal, host string, op Operation, resource ResourceType, name string) bool
}

// ResourceTypeAuthorizer is an Authorizer that can also tell whether a
// principal may perform op on some resource of a type (Kafka's
// Authorizer.authorizeByResourceType), as an idempotent producer with
// WRITE on a topic needs no IDEMPOTENT_WRITE on the cluster. Without it,
// the answer is no.
type ResourceTypeAuthorizer interface {
	AuthorizeByResourceType(principal, host string, op Operation, resource ResourceType) bool
}

// hostAddress is the host ACLs match a client connected from addr
// against: its IP address as Java's InetAddress.getHostAddress writes it,
// addr's text when it has none.
func hostAddress(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok {
		return javaHostAddress(a.IP)
	}
	return addr.String()
}

// javaHostAddress is ip as Java writes it: an IPv4 address (or an IPv6
// one mapping one, which Java reads as IPv4) dotted, an IPv6 address as
// eight groups of hexadecimal without the :: shortening, so that an ACL's
// host written for Kafka matches here too.
func javaHostAddress(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = strconv.FormatUint(uint64(ip[2*i])<<8|uint64(ip[2*i+1]), 16)
	}
	return strings.Join(groups, ":")
}

// allowAll is the Authorizer of a broker configured without one.
type allowAll struct{}

func (allowAll) Authorize(string, string, Operation, ResourceType, string) bool { return true }

// authorize asks the request's authorizer about its principal. With an
// authorizer configured, each decision is counted and each denial logged:
// one info line with the principal, host, operation, resource and request,
// as Kafka's kafka.authorizer.logger logs it.
func (rc *reqCtx) authorize(op Operation, resource ResourceType, name string) bool {
	allowed := rc.decide(op, resource, name)
	if !allowed && rc.svc != nil && rc.req != nil && !rc.isAllowAll() {
		rc.svc.logger.Info("authorization denied", zap.String("principal", rc.principal), zap.String("host", rc.clientHost),
			zap.Stringer("operation", op), zap.String("resource", resource.String()+":"+name),
			zap.String("request", kmsg.NameForKey(rc.req.Key)))
	}
	return allowed
}

// authorizeQuietly is authorize without the denial's log line, for the
// requests that leave out what may not be seen (Metadata of every topic,
// ListGroups, authorized operations), as Kafka's logIfDenied=false.
func (rc *reqCtx) authorizeQuietly(op Operation, resource ResourceType, name string) bool {
	return rc.decide(op, resource, name)
}

// decide asks the authorizer and counts its decision.
func (rc *reqCtx) decide(op Operation, resource ResourceType, name string) bool {
	allowed := rc.authz.Authorize(rc.principal, rc.clientHost, op, resource, name)
	if rc.svc != nil && rc.svc.metrics != nil && !rc.isAllowAll() {
		rc.svc.metrics.Authorization(op.String(), resource.String(), allowed)
	}
	return allowed
}

// isAllowAll says whether no authorizer is configured.
func (rc *reqCtx) isAllowAll() bool {
	_, ok := rc.authz.(allowAll)
	return ok
}

// authorizeByResourceType asks whether the principal may perform op on
// some resource of the type.
func (rc *reqCtx) authorizeByResourceType(op Operation, resource ResourceType) bool {
	a, ok := rc.authz.(ResourceTypeAuthorizer)
	return ok && a.AuthorizeByResourceType(rc.principal, rc.clientHost, op, resource)
}

// authorizeCluster asks about op on the cluster resource.
func (rc *reqCtx) authorizeCluster(op Operation) bool {
	return rc.authorize(op, ResourceCluster, clusterName)
}

// supportedOperations are the operations of each resource type whose bits
// authorized operations hold (Kafka's AclEntry.supportedOperations).
var supportedOperations = map[ResourceType][]Operation{
	ResourceTopic:   {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:   {OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs},
	ResourceCluster: {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
}

// authorizedOperations is the KIP-430 bit field of the operations the
// principal may perform on the named resource.
func (rc *reqCtx) authorizedOperations(resource ResourceType, name string) int32 {
	var ops int32
	for _, op := range supportedOperations[resource] {
		if rc.authorizeQuietly(op, resource, name) {
			ops |= 1 << op
		}
	}
	return ops
}

// clusterAuthorizedOperations is the cluster's authorized operations, 0
// when the principal may not DESCRIBE the cluster, as Kafka's Metadata and
// DescribeCluster answer.
func (rc *reqCtx) clusterAuthorizedOperations() int32 {
	if !rc.authorizeCluster(OpDescribe) {
		return 0
	}
	return rc.authorizedOperations(ResourceCluster, clusterName)
}

// configRefused is the error for a config resource op may not be done on:
// a broker's and a client metrics subscription's configs are the
// cluster's (CLUSTER_AUTHORIZATION_FAILED), a
// topic's or group's their own, as Kafka's ConfigHelper and
// ControllerApis.authorizeAlterResource. Other types are left to the
// handler, which does not serve them.
func configRefused(rc *reqCtx, op Operation, typ kmsg.ConfigResourceType, name string) error {
	switch {
	case typ == kmsg.ConfigResourceTypeBroker || typ == kmsg.ConfigResourceTypeBrokerLogger || typ == kmsg.ConfigResourceTypeClientMetrics:
		if !rc.authorizeCluster(op) {
			return kerr.ClusterAuthorizationFailed
		}
	case typ == kmsg.ConfigResourceTypeTopic:
		if !rc.authorize(op, ResourceTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
	case typ == kmsg.ConfigResourceTypeGroupConfig:
		if !rc.authorize(op, ResourceGroup, name) {
			return kerr.GroupAuthorizationFailed
		}
	}
	return nil
}

// distinct is names without repeats.
func distinct(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// authorizedTopics asks about op on each distinct topic once, as Kafka's
// filterByAuthorized does, and returns the allowed ones.
func (rc *reqCtx) authorizedTopics(op Operation, names []string) map[string]bool {
	allowed := make(map[string]bool, len(names))
	asked := make(map[string]bool, len(names))
	for _, n := range names {
		if asked[n] {
			continue
		}
		asked[n] = true
		if rc.authorize(op, ResourceTopic, n) {
			allowed[n] = true
		}
	}
	return allowed
}
