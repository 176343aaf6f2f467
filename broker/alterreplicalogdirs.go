package broker

// AlterReplicaLogDirs (key 34, v1-2), what kafka-reassign-partitions sends
// for a reassignment's log_dirs: move this broker's replica of a partition
// to another of its log.dirs. Without ALTER on the cluster every partition
// is CLUSTER_AUTHORIZATION_FAILED, one result per topic of each dir as
// Kafka's getErrorResponse writes them. Otherwise each partition is
// answered as Kafka's ReplicaManager.alterReplicaLogDirs answers it (a
// partition named under two dirs goes to the last): a topic whose future
// directory name would pass 255 characters is INVALID_TOPIC_EXCEPTION; a
// dir that is not the absolute path of one of log.dirs is
// LOG_DIR_NOT_FOUND; a partition that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION, one this broker holds no replica of
// REPLICA_NOT_AVAILABLE, one whose log failed KAFKA_STORAGE_ERROR; a
// replica already in the dir is NONE with nothing to do.
//
// Where Strata differs: a broker has exactly one log dir (README), so the
// only dir a request may name is the one every replica is already in, and
// no replica ever moves: there is no future log, DescribeLogDirs never
// shows IsFuture, and the answers are the ones Kafka gives on a broker
// with a single log.dirs entry.

import (
	"path/filepath"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerAlterReplicaLogDirs serves AlterReplicaLogDirs; its versions are here and nowhere else.
func registerAlterReplicaLogDirs(r *registry) {
	r.add(kmsg.AlterReplicaLogDirs, 1, 2, handleAlterReplicaLogDirs)
}

// maxFutureDirName is the longest directory name Kafka creates a future
// log under (a file name's limit on most file systems, KAFKA-4893).
const maxFutureDirName = 255

// futureDirNameLen is the length of Kafka's UnifiedLog.logFutureDirName
// for topic's partition p: <topic>-<p>.<32 hex digits>-future.
func futureDirNameLen(topic string, p int32) int {
	return len(topic) + 1 + len(strconv.Itoa(int(p))) + 1 + 32 + len("-future")
}

func handleAlterReplicaLogDirs(rc *reqCtx) (kmsg.Response, error) {
	b := rc.svc
	r := rc.req.Body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := kmsg.NewPtrAlterReplicaLogDirsResponse()
	if !rc.authorizeCluster(OpAlter) {
		for _, d := range r.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.AlterReplicaLogDirsResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.AlterReplicaLogDirsResponseTopicPartition{Partition: p, ErrorCode: kerr.ClusterAuthorizationFailed.Code})
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp, nil
	}
	logDir := b.cfg.LogDirs
	if abs, err := filepath.Abs(logDir); err == nil {
		logDir = abs
	}
	type tp struct {
		topic string
		p     int32
	}
	dest := map[tp]string{}
	var order []tp
	for _, d := range r.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				k := tp{t.Topic, p}
				if _, seen := dest[k]; !seen {
					order = append(order, k)
				}
				dest[k] = d.Dir
			}
		}
	}
	img := b.meta.Image()
	code := func(k tp) int16 {
		switch {
		case futureDirNameLen(k.topic, k.p) > maxFutureDirName:
			return kerr.InvalidTopicException.Code
		case dest[k] != logDir:
			return kerr.LogDirNotFound.Code
		}
		ti := img.Topics.ByName(k.topic)
		if ti == nil {
			return kerr.UnknownTopicOrPartition.Code
		}
		if _, ok := ti.Partition(k.p); !ok {
			return kerr.UnknownTopicOrPartition.Code
		}
		var hosted bool
		if t := b.logs.Topic(k.topic); t != nil && t.ID == ti.ID {
			if p := t.Partition(k.p); p != nil && replicaOf(ti, k.p, b.cfg.NodeID) {
				if p.Log.Failed() != nil {
					return kerr.KafkaStorageError.Code
				}
				hosted = true
			}
		}
		if !hosted {
			return kerr.ReplicaNotAvailable.Code
		}
		return 0
	}
	byTopic := map[string]int{}
	for _, k := range order {
		i, ok := byTopic[k.topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[k.topic] = i
			resp.Topics = append(resp.Topics, kmsg.AlterReplicaLogDirsResponseTopic{Topic: k.topic})
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, kmsg.AlterReplicaLogDirsResponseTopicPartition{Partition: k.p, ErrorCode: code(k)})
	}
	return resp, nil
}
