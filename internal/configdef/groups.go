package configdef

import "slices"

// GroupDef is a GROUP config resource's key (Kafka 4.4's GroupConfig): a
// group's own override of a broker's group.* setting.
type GroupDef struct {
	Def
	// BrokerSynonym is the broker config that gives the key its default;
	// "" when the key's own Default does.
	BrokerSynonym string
	// Internal keys are accepted and described when named, but left out of
	// a listing of every key, as Kafka's ConfigDef.internalConfig.
	Internal bool
}

// groupDefs are Kafka 4.4's group configs, in GroupConfig's definition
// order (the order ConfigDef.parse reports a bad value in), with its types,
// defaults, validators and documentation.
var groupDefs = []GroupDef{
	{Def: Def{Name: "consumer.session.timeout.ms", Type: Int, Default: "45000", Check: Check{Min: 1}, Doc: "The timeout to detect client failures when using the consumer group protocol."}, BrokerSynonym: "group.consumer.session.timeout.ms"},
	{Def: Def{Name: "consumer.heartbeat.interval.ms", Type: Int, Default: "5000", Check: Check{Min: 1}, Doc: "The heartbeat interval given to the members of a consumer group."}, BrokerSynonym: "group.consumer.heartbeat.interval.ms"},
	{Def: Def{Name: "consumer.assignment.interval.ms", Type: Int, Default: "1000", Check: Check{Min: 0}, Doc: "The interval between assignment updates for a consumer group."}, BrokerSynonym: "group.consumer.assignment.interval.ms"},
	{Def: Def{Name: "consumer.assignor.offload.enable", Type: Boolean, Default: "true", Doc: "Whether to offload consumer group assignment to a group coordinator background thread."}, BrokerSynonym: "group.consumer.assignor.offload.enable", Internal: true},
	{Def: Def{Name: "share.session.timeout.ms", Type: Int, Default: "45000", Check: Check{Min: 1}, Doc: "The timeout to detect client failures when using the share group protocol."}, BrokerSynonym: "group.share.session.timeout.ms"},
	{Def: Def{Name: "share.heartbeat.interval.ms", Type: Int, Default: "5000", Check: Check{Min: 1}, Doc: "The heartbeat interval given to the members of a share group."}, BrokerSynonym: "group.share.heartbeat.interval.ms"},
	{Def: Def{Name: "share.record.lock.duration.ms", Type: Int, Default: "30000", Check: Check{Min: 1000}, Doc: "The record acquisition lock duration in milliseconds for share groups."}, BrokerSynonym: "group.share.record.lock.duration.ms"},
	{Def: Def{Name: "share.delivery.count.limit", Type: Int, Default: "5", Check: Check{Min: 2}, Doc: "The maximum number of delivery attempts for a record delivered to a share group."}, BrokerSynonym: "group.share.delivery.count.limit"},
	{Def: Def{Name: "share.partition.max.record.locks", Type: Int, Default: "2000", Check: Check{Min: 100}, Doc: "Share-group record lock limit per share-partition."}, BrokerSynonym: "group.share.partition.max.record.locks"},
	{Def: Def{Name: "share.auto.offset.reset", Type: String, Default: "latest", Doc: "The strategy to initialize the share-partition start offset. <ul><li>earliest: automatically reset the offset to the earliest offset</li><li>latest: automatically reset the offset to the latest offset</li><li>by_duration:&lt;duration&gt;: automatically reset the offset to a configured duration from the current timestamp. &lt;duration&gt; must be specified in ISO8601 format (PnDTnHnMn.nS). Negative duration is not allowed.</li><li>anything else: throw exception to the share consumer.</li></ul>"}, BrokerSynonym: ""},
	{Def: Def{Name: "share.isolation.level", Type: String, Default: "read_uncommitted", Check: Check{OneOf: []string{"read_committed", "read_uncommitted"}}, Doc: "Controls how to read records written transactionally. If set to \"read_committed\", the share group will only deliver transactional records which have been committed. If set to \"read_uncommitted\", the share group will return all messages, even transactional messages which have been aborted. Non-transactional records will be returned unconditionally in either mode."}, BrokerSynonym: ""},
	{Def: Def{Name: "share.renew.acknowledge.enable", Type: Boolean, Default: "true", Doc: "Whether the renew acknowledge type is enabled for the share group."}, BrokerSynonym: ""},
	{Def: Def{Name: "share.assignment.interval.ms", Type: Int, Default: "1000", Check: Check{Min: 0}, Doc: "The interval between assignment updates for a share group."}, BrokerSynonym: "group.share.assignment.interval.ms"},
	{Def: Def{Name: "share.assignor.offload.enable", Type: Boolean, Default: "true", Doc: "Whether to offload share group assignment to a group coordinator background thread."}, BrokerSynonym: "group.share.assignor.offload.enable", Internal: true},
	{Def: Def{Name: "streams.session.timeout.ms", Type: Int, Default: "45000", Check: Check{Min: 1}, Doc: "The timeout to detect client failures when using the streams group protocol."}, BrokerSynonym: "group.streams.session.timeout.ms"},
	{Def: Def{Name: "streams.heartbeat.interval.ms", Type: Int, Default: "5000", Check: Check{Min: 1}, Doc: "The heartbeat interval given to the members."}, BrokerSynonym: "group.streams.heartbeat.interval.ms"},
	{Def: Def{Name: "streams.num.standby.replicas", Type: Int, Default: "0", Check: Check{Min: 0}, Doc: "The number of standby replicas for each task."}, BrokerSynonym: "group.streams.num.standby.replicas"},
	{Def: Def{Name: "streams.initial.rebalance.delay.ms", Type: Int, Default: "3000", Check: Check{Min: 0}, Doc: "The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance. A longer delay means potentially fewer rebalances."}, BrokerSynonym: "group.streams.initial.rebalance.delay.ms"},
	{Def: Def{Name: "streams.assignment.interval.ms", Type: Int, Default: "1000", Check: Check{Min: 0}, Doc: "The interval between assignment updates for a streams group."}, BrokerSynonym: "group.streams.assignment.interval.ms"},
	{Def: Def{Name: "streams.assignor.offload.enable", Type: Boolean, Default: "true", Doc: "Whether to offload streams group assignment to a group coordinator background thread."}, BrokerSynonym: "group.streams.assignor.offload.enable", Internal: true},
	{Def: Def{Name: "streams.task.offset.interval.ms", Type: Int, Default: "60000", Check: Check{Min: 1}, Doc: "The interval in which the warmup task changelog offsets on a client are updated on the broker. The offsets are sent with the next heartbeat after this time has passed."}, BrokerSynonym: "group.streams.task.offset.interval.ms", Internal: true},
	{Def: Def{Name: "streams.num.warmup.replicas", Type: Int, Default: "2", Check: Check{Min: 0}, Doc: "The maximum number of warmup task replicas."}, BrokerSynonym: "group.streams.num.warmup.replicas", Internal: true},
	{Def: Def{Name: "streams.rack.aware.assignment.tags", Type: List, Default: "", Doc: "List of client tag keys used to distribute standby replicas across Kafka Streams instances. When configured, and the used broker-side assignor supports it, it will make a best-effort to distribute standby tasks over each client tag dimension."}, BrokerSynonym: "group.streams.rack.aware.assignment.tags"},
	{Def: Def{Name: "streams.acceptable.recovery.lag", Type: Long, Default: "10000", Check: Check{Min: 0}, Doc: "The maximum acceptable lag (number of offsets to catch up) for a client to be considered caught-up enough to receive an active task assignment."}, BrokerSynonym: "group.streams.acceptable.recovery.lag", Internal: true},
	{Def: Def{Name: "streams.assignor.name", Type: String, Default: "", Doc: "The task assignor to use for this streams group, selected by short name from the assignors registered via the broker configuration group.streams.assignors. When unset, the group defaults to the first assignor configured in the broker's group.streams.assignors setting. Changing the assignor does not trigger a rebalance for the group; the new assignor takes effect on the next rebalance."}, BrokerSynonym: "group.streams.assignors"},
	{Def: Def{Name: "errors.deadletterqueue.topic.name", Type: String, Default: "", Doc: "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. If blank (the default), the group does not have a DLQ topic."}, BrokerSynonym: ""},
	{Def: Def{Name: "errors.deadletterqueue.copy.record.enable", Type: Boolean, Default: "false", Doc: "When writing onto the dead-letter queue topic, whether to copy the original record onto the DLQ topic, or just write a record containing the context information headers."}, BrokerSynonym: ""},
}

// GroupBrokerDefaults are Kafka's defaults of the broker configs that give
// the group configs their defaults and bounds (GroupCoordinatorConfig,
// ShareGroupConfig); server.properties overrides the ones Strata reads.
var GroupBrokerDefaults = map[string]string{
	"group.consumer.session.timeout.ms":          "45000",
	"group.consumer.min.session.timeout.ms":      "45000",
	"group.consumer.max.session.timeout.ms":      "60000",
	"group.consumer.heartbeat.interval.ms":       "5000",
	"group.consumer.min.heartbeat.interval.ms":   "5000",
	"group.consumer.max.heartbeat.interval.ms":   "15000",
	"group.consumer.assignment.interval.ms":      "1000",
	"group.consumer.min.assignment.interval.ms":  "0",
	"group.consumer.max.assignment.interval.ms":  "15000",
	"group.consumer.assignor.offload.enable":     "true",
	"group.share.session.timeout.ms":             "45000",
	"group.share.min.session.timeout.ms":         "45000",
	"group.share.max.session.timeout.ms":         "60000",
	"group.share.heartbeat.interval.ms":          "5000",
	"group.share.min.heartbeat.interval.ms":      "5000",
	"group.share.max.heartbeat.interval.ms":      "15000",
	"group.share.assignment.interval.ms":         "1000",
	"group.share.min.assignment.interval.ms":     "0",
	"group.share.max.assignment.interval.ms":     "15000",
	"group.share.assignor.offload.enable":        "true",
	"group.share.record.lock.duration.ms":        "30000",
	"group.share.min.record.lock.duration.ms":    "15000",
	"group.share.max.record.lock.duration.ms":    "60000",
	"group.share.delivery.count.limit":           "5",
	"group.share.min.delivery.count.limit":       "2",
	"group.share.max.delivery.count.limit":       "10",
	"group.share.partition.max.record.locks":     "2000",
	"group.share.min.partition.max.record.locks": "100",
	"group.share.max.partition.max.record.locks": "4000",
	"group.streams.session.timeout.ms":           "45000",
	"group.streams.min.session.timeout.ms":       "45000",
	"group.streams.max.session.timeout.ms":       "60000",
	"group.streams.heartbeat.interval.ms":        "5000",
	"group.streams.min.heartbeat.interval.ms":    "5000",
	"group.streams.max.heartbeat.interval.ms":    "15000",
	"group.streams.num.standby.replicas":         "0",
	"group.streams.max.standby.replicas":         "2",
	"group.streams.initial.rebalance.delay.ms":   "3000",
	"group.streams.assignment.interval.ms":       "1000",
	"group.streams.min.assignment.interval.ms":   "0",
	"group.streams.max.assignment.interval.ms":   "15000",
	"group.streams.assignor.offload.enable":      "true",
	"group.streams.task.offset.interval.ms":      "60000",
	"group.streams.min.task.offset.interval.ms":  "15000",
	"group.streams.num.warmup.replicas":          "2",
	"group.streams.max.warmup.replicas":          "20",
	"group.streams.rack.aware.assignment.tags":   "",
	"group.streams.acceptable.recovery.lag":      "10000",
	"group.streams.assignors":                    "sticky",
}

// GroupBound is a broker bound on a group config's value, checked in
// Kafka's order (GroupConfig.validateValues): Min and Max name broker
// configs, "" for no bound on that side.
type GroupBound struct {
	Key, Min, Max string
}

// GroupBounds are the broker bounds of the group configs, in Kafka's order.
var GroupBounds = []GroupBound{
	{"consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	{"consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	{"consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms"},
	{"share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	{"share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
	{"share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
	{"share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	{"share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"},
	{"streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"},
	{"streams.num.standby.replicas", "", "group.streams.max.standby.replicas"},
	{"streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms"},
	{"streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", ""},
	{"streams.num.warmup.replicas", "", "group.streams.max.warmup.replicas"},
}

// GroupSessionPairs are the session timeouts that must exceed their
// heartbeat intervals, in Kafka's order.
var GroupSessionPairs = [][2]string{
	{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "streams.heartbeat.interval.ms"},
}

// Groups returns the group configs in Kafka's definition order.
func Groups() []GroupDef { return groupDefs }

// GroupConfigDef returns the definition of a group config.
func GroupConfigDef(name string) (GroupDef, bool) {
	i := slices.IndexFunc(groupDefs, func(d GroupDef) bool { return d.Name == name })
	if i < 0 {
		return GroupDef{}, false
	}
	return groupDefs[i], true
}
