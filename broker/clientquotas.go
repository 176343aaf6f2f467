package broker

// DescribeClientQuotas and AlterClientQuotas, as a KRaft Kafka serves
// them: the quotas are the metadata image's (ClientQuotaRecord);
// DescribeClientQuotas answers from this node's image with Kafka's
// ClientQuotasImage.describe filters, AlterClientQuotas is decided on the
// latest image with Kafka's ClientQuotaControlManager checks and messages
// and, in a cluster, forwarded to the active controller. Describe needs
// DESCRIBE_CONFIGS on the cluster, Alter ALTER_CONFIGS, as KafkaApis and
// ControllerApis ask. Enforcement is quotas.go's.

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
)

// Kafka's client quota keys (QuotaConfig).
const (
	quotaProducerByteRate       = "producer_byte_rate"
	quotaConsumerByteRate       = "consumer_byte_rate"
	quotaRequestPercentage      = "request_percentage"
	quotaControllerMutationRate = "controller_mutation_rate"
	quotaConnectionCreationRate = "connection_creation_rate"
)

// quotaKeyType is the config type of each key an entity may set: the
// user and client-id keys (QuotaConfig.userAndClientQuotaConfigs), and
// the ip key (ipConfigs).
type quotaKeyType int

const (
	quotaLong quotaKeyType = iota
	quotaInt
	quotaDouble
)

var userClientQuotaKeys = map[string]quotaKeyType{
	quotaProducerByteRate:       quotaLong,
	quotaConsumerByteRate:       quotaLong,
	quotaRequestPercentage:      quotaDouble,
	quotaControllerMutationRate: quotaDouble,
}

var ipQuotaKeys = map[string]quotaKeyType{quotaConnectionCreationRate: quotaInt}

// registerClientQuotas serves DescribeClientQuotas and AlterClientQuotas; their versions are here and nowhere else.
func registerClientQuotas(r *registry) {
	r.add(kmsg.DescribeClientQuotas, 0, 1, handleDescribeClientQuotas)
	r.add(kmsg.AlterClientQuotas, 0, 1, handleAlterClientQuotas)
}

func handleDescribeClientQuotas(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	var err error
	if !rc.authorizeCluster(OpDescribeConfigs) {
		err = kerr.ClusterAuthorizationFailed
	} else {
		resp.Entries, err = describeClientQuotas(rc.svc.meta.Image().Access.ClientQuotas, r)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage, resp.Entries = rc.svc.errorCode(kmsg.DescribeClientQuotas, err), errorMessage(err), nil
	}
	return resp, nil
}

// describeClientQuotas is Kafka's ClientQuotasImage.describe: each
// component of the filter matches an exact name, the default, or any
// name of its type; strict leaves out entities of other types too.
func describeClientQuotas(quotas metadata.ClientQuotasImage, r *kmsg.DescribeClientQuotasRequest) ([]kmsg.DescribeClientQuotasResponseEntry, error) {
	exact := map[string]metadata.QuotaName{}
	any := map[string]bool{}
	for _, c := range r.Components {
		typ := c.EntityType
		if typ == "" {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Invalid empty entity type.")
		}
		if _, ok := exact[typ]; ok || any[typ] {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Entity type %s cannot appear more than once in the filter.", typ)
		}
		if typ != metadata.QuotaIP && typ != metadata.QuotaUser && typ != metadata.QuotaClientID {
			return nil, kafkaerr.New(kerr.UnsupportedVersion, "Unsupported entity type %s", typ)
		}
		switch c.MatchType {
		case 0:
			if c.Match == nil {
				return nil, kafkaerr.New(kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[typ] = metadata.Named(*c.Match)
		case 1:
			if c.Match != nil {
				return nil, kafkaerr.New(kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[typ] = metadata.DefaultName()
		case 2:
			if c.Match != nil {
				return nil, kafkaerr.New(kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			any[typ] = true
		default:
			return nil, kafkaerr.New(kerr.InvalidRequest, "Unknown match type %d", c.MatchType)
		}
	}
	_, ipExact := exact[metadata.QuotaIP]
	_, userExact := exact[metadata.QuotaUser]
	_, clientExact := exact[metadata.QuotaClientID]
	if (ipExact || any[metadata.QuotaIP]) && (userExact || any[metadata.QuotaUser] || clientExact || any[metadata.QuotaClientID]) {
		return nil, kafkaerr.New(kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	entries := []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range quotas.Entities() {
		names := entityNames(e)
		if r.Strict && len(names) != len(exact)+len(any) {
			continue
		}
		if slices.ContainsFunc(slices.Collect(maps.Keys(exact)), func(typ string) bool { n, ok := names[typ]; return !ok || n != exact[typ] }) ||
			slices.ContainsFunc(slices.Collect(maps.Keys(any)), func(typ string) bool { _, ok := names[typ]; return !ok }) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Parts() {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.EntityType, p.EntityName
			entry.Entity = append(entry.Entity, ee)
		}
		values := quotas.Of(e)
		for _, k := range slices.Sorted(maps.Keys(values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, values[k]
			entry.Values = append(entry.Values, v)
		}
		entries = append(entries, entry)
	}
	return entries, nil
}

// entityNames is e's names by entity type.
func entityNames(e metadata.QuotaEntity) map[string]metadata.QuotaName {
	out := map[string]metadata.QuotaName{}
	for typ, n := range map[string]metadata.QuotaName{metadata.QuotaUser: e.User, metadata.QuotaClientID: e.ClientID, metadata.QuotaIP: e.IP} {
		if n.Set {
			out[typ] = n
		}
	}
	return out
}

func handleAlterClientQuotas(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.AlterClientQuotasRequest)
	var errs []error
	if !rc.authorizeCluster(OpAlterConfigs) {
		errs = make([]error, len(r.Entries))
		for i := range errs {
			errs[i] = kerr.ClusterAuthorizationFailed
		}
	} else {
		var err error
		if errs, err = rc.svc.alterClientQuotas(r); err != nil {
			for i := range errs {
				errs[i] = err
			}
		}
	}
	resp := alterClientQuotasAnswer(r, 0)
	for i, err := range errs {
		if err != nil {
			resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = rc.svc.errorCode(kmsg.AlterClientQuotas, err), errorMessage(err)
		}
	}
	return resp, nil
}

// alterClientQuotas decides r's entries on the latest image, as Kafka's
// ClientQuotaControlManager.alterClientQuotas: each entry's error, and
// the records of those that pass, proposed together unless r is
// validate-only. err is the proposal's, for every entry.
func (b *services) alterClientQuotas(r *kmsg.AlterClientQuotasRequest) (errs []error, err error) {
	decide := func(img *metadata.Image) ([]metadata.Record, error) {
		errs = make([]error, len(r.Entries))
		var records []metadata.Record
		seen := map[metadata.QuotaEntity]bool{}
		for i, e := range r.Entries {
			entity, err := quotaEntityOf(e.Entity)
			if err == nil && seen[entity] {
				err = kafkaerr.New(kerr.InvalidRequest, "Ignoring duplicate entity %s", describeEntity(e.Entity))
			}
			seen[entity] = true
			var rs []metadata.Record
			if err == nil {
				rs, err = quotaRecords(img.Access.ClientQuotas.Of(entity), entity, e)
			}
			errs[i] = err
			records = append(records, rs...)
		}
		return records, nil
	}
	if r.ValidateOnly {
		_, err := decide(b.meta.Image())
		return errs, err
	}
	_, err = b.meta.Update(decide)
	if errs == nil {
		errs = make([]error, len(r.Entries))
	}
	return errs, err
}

// quotaEntityOf checks a request's entity as Kafka's validateEntity and
// configKeysForEntityType do; a type named twice is its last name, as
// Kafka reads the entity into a map first.
func quotaEntityOf(parts []kmsg.AlterClientQuotasRequestEntryEntity) (metadata.QuotaEntity, error) {
	byType := map[string]*string{}
	for _, p := range parts {
		byType[p.Type] = p.Name
	}
	if len(byType) == 0 {
		return metadata.QuotaEntity{}, kafkaerr.New(kerr.InvalidRequest, "Invalid empty client quota entity")
	}
	var data []metadata.QuotaEntityData
	for _, typ := range slices.Sorted(maps.Keys(byType)) {
		name := byType[typ]
		if typ != metadata.QuotaUser && typ != metadata.QuotaClientID && typ != metadata.QuotaIP {
			return metadata.QuotaEntity{}, kafkaerr.New(kerr.InvalidRequest, "Unhandled client quota entity type: %s", typ)
		}
		if name != nil && *name == "" {
			return metadata.QuotaEntity{}, kafkaerr.New(kerr.InvalidRequest, "Empty %s not supported", typ)
		}
		data = append(data, metadata.QuotaEntityData{EntityType: typ, EntityName: name})
	}
	entity, err := metadata.QuotaEntityOf(data)
	if err != nil {
		return metadata.QuotaEntity{}, fmt.Errorf("%v: %w", err, kerr.InvalidRequest)
	}
	if entity.IP.Set {
		if entity.User.Set || entity.ClientID.Set {
			// Kafka's message, its missing space included.
			return metadata.QuotaEntity{}, kafkaerr.New(kerr.InvalidRequest, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
		}
		if !entity.IP.Default && net.ParseIP(entity.IP.Name) == nil {
			if _, err := net.LookupHost(entity.IP.Name); err != nil {
				return metadata.QuotaEntity{}, kafkaerr.New(kerr.InvalidRequest, "%s is not a valid IP or resolvable host.", entity.IP.Name)
			}
		}
	}
	return entity, nil
}

// quotaRecords are the ClientQuotaRecords of one entry's ops on the
// entity's current quotas: a removal of a set key, a value that changes;
// the first op that fails fails the entry, as Kafka's
// alterClientQuotaEntity.
func quotaRecords(current map[string]float64, entity metadata.QuotaEntity, e kmsg.AlterClientQuotasRequestEntry) ([]metadata.Record, error) {
	keys := userClientQuotaKeys
	if entity.IP.Set {
		keys = ipQuotaKeys
	}
	ops := map[string]*float64{}
	for _, op := range e.Ops {
		if _, dup := ops[op.Key]; dup {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Duplicate quota key %s not updating quota for this entity %s", op.Key, describeEntity(e.Entity))
		}
		if op.Remove {
			ops[op.Key] = nil
		} else {
			ops[op.Key] = new(op.Value)
		}
	}
	var records []metadata.Record
	for _, key := range slices.Sorted(maps.Keys(ops)) {
		v := ops[key]
		if v == nil {
			if _, set := current[key]; set {
				records = append(records, metadata.ClientQuotaRecord{Entity: entity.Parts(), Key: key, Remove: true})
			}
			continue
		}
		if err := checkQuotaValue(keys, key, *v); err != nil {
			return nil, err
		}
		if was, set := current[key]; !set || was != *v {
			records = append(records, metadata.ClientQuotaRecord{Entity: entity.Parts(), Key: key, Value: *v})
		}
	}
	return records, nil
}

// checkQuotaValue is Kafka's validateQuotaKeyValue.
func checkQuotaValue(keys map[string]quotaKeyType, key string, v float64) error {
	typ, ok := keys[key]
	if !ok {
		return kafkaerr.New(kerr.InvalidRequest, "Invalid configuration key %s", key)
	}
	if !(v > 0) {
		return kafkaerr.New(kerr.InvalidRequest, "Quota %s must be greater than 0", key)
	}
	switch {
	case typ == quotaDouble:
		return nil
	case typ == quotaInt && v > math.MaxInt32:
		return kafkaerr.New(kerr.InvalidRequest, "Proposed value for %s is too large for an INT.", key)
	case typ == quotaLong && v > math.MaxInt64:
		return kafkaerr.New(kerr.InvalidRequest, "Proposed value for %s is too large for a LONG.", key)
	}
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return kafkaerr.New(kerr.InvalidRequest, "%s cannot be a fractional value.", key)
	}
	return nil
}

// describeEntity is an entity as Kafka's ClientQuotaEntity.toString
// writes it.
func describeEntity(parts []kmsg.AlterClientQuotasRequestEntryEntity) string {
	var s []string
	for _, p := range parts {
		name := "null"
		if p.Name != nil {
			name = *p.Name
		}
		s = append(s, p.Type+"="+name)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(s, ", ") + "})"
}

// alterClientQuotasAnswer answers each of r's entries code.
func alterClientQuotasAnswer(r *kmsg.AlterClientQuotasRequest, code int16) *kmsg.AlterClientQuotasResponse {
	resp := kmsg.NewPtrAlterClientQuotasResponse()
	for _, e := range r.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode = code
		for _, p := range e.Entity {
			ee := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.Type, p.Name
			re.Entity = append(re.Entity, ee)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

// alteredClientQuotas: each entry the controller answered without error
// shows its ops in the image (a forwarded change, forward_await.go).
func alteredClientQuotas(req *kmsg.AlterClientQuotasRequest, resp *kmsg.AlterClientQuotasResponse) []imageCheck {
	var checks []imageCheck
	for i, e := range req.Entries {
		if i >= len(resp.Entries) || resp.Entries[i].ErrorCode != 0 {
			continue
		}
		entity, err := quotaEntityOf(e.Entity)
		if err != nil {
			continue
		}
		ops := e.Ops
		checks = append(checks, func(img *metadata.Image) bool {
			current := img.Access.ClientQuotas.Of(entity)
			return !slices.ContainsFunc(ops, func(op kmsg.AlterClientQuotasRequestEntryOp) bool {
				v, set := current[op.Key]
				return set == op.Remove || !op.Remove && v != op.Value
			})
		})
	}
	return checks
}
