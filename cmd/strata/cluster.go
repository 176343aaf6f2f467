package main

// A node of a cluster (controller.quorum.voters lists several voters):
// before the broker starts, the controller listener is bound and the
// metadata quorum opened on it, in <log dir>/__strata_metadata. There is
// no format step: a node whose metadata dir is empty bootstraps the quorum
// with the voters of its server.properties, as every node of a Kafka
// cluster is formatted with the same voters.

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
	"github.com/strata-io/strata/metadata/quorum"
)

// startQuorum binds the controller listener, opens the quorum on it and
// points cfg at them; stop closes them after the broker stopped.
func startQuorum(s settings, cfg *broker.Config, log *zap.Logger) (stop func() error, err error) {
	var self string
	for _, v := range s.Voters {
		if v.ID == s.NodeID {
			self = v.Addr
		}
	}
	_, addr, _ := strings.Cut(s.ControllerListener, "://")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("controller listener %s: %w", s.ControllerListener, err)
	}
	logger := log.With(zap.String("component", "metadata quorum"))
	cl, err := quorum.NewControllerListener(ln, self, logger)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("controller listener %s: %w", s.ControllerListener, err)
	}
	store, err := quorum.Open(quorum.Config{NodeID: s.NodeID, Dir: filepath.Join(s.LogDir, quorum.DirName), Voters: s.Voters,
		Transport: cl.Transport(s.Quorum.Request, logger), Logger: logger,
		HeartbeatTimeout: s.Quorum.Fetch, ElectionTimeout: max(s.Quorum.Election, s.Quorum.Fetch)})
	if err != nil {
		cl.Close()
		return nil, err
	}
	cl.NotifyRaftConnClosed(store.RaftConnClosed)
	cfg.Metadata, cfg.Quorum, cfg.ControllerListener, cfg.Cluster = store, store, cl.Kafka(), s.Cluster
	log.Info("node of a cluster: serving the controller listener", zap.String("controller.listener", s.ControllerListener),
		zap.String("controller.quorum.voters", s.Cluster.Voters), zap.String("cluster.id", s.Cluster.ClusterID))
	return func() error { return errors.Join(store.Close(), cl.Close()) }, nil
}
