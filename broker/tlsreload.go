package broker

// Dynamic listener TLS (KIP-226), as Kafka's DynamicBrokerConfig and
// SslFactory do it in KRaft: this node's dynamic broker configs may set
// an SSL or SASL_SSL client listener's key and trust stores
// (listener.name.<listener>.ssl.keystore.location and the other keys of
// SslConfigs.RECONFIGURABLE_CONFIGS; storage refuses them at the cluster
// default and without the prefix). Each change of them, and each
// AlterConfigs or IncrementalAlterConfigs of this node's resource even
// when no value changes (Kafka's KAFKA-14136: a store file replaced in
// place is read again), rebuilds the listener's server side from its
// files; new connections get it, open ones keep theirs. A change of a
// listener's keys whose stores do not load, or whose certificate has
// another subject or drops a subject alternative name (unless
// ssl.allow.dn.changes or ssl.allow.san.changes), is refused with
// INVALID_REQUEST by the node it names, before anything is changed, as
// Kafka's ConfigAdminManager refuses it. A reload that fails with the keys
// unchanged (a file rewritten with such a certificate) is answered as a
// success and logged, and the listener keeps what it had, as in Kafka.
//
// Differences from Kafka: the client side between nodes and the quorum's
// controller listener keep the certificates they started with.

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/metadata"
)

// listenerDynamicTLS is the part of a node's dynamic configs that is
// listener's TLS: listener.name.<listener in lower case>.ssl.* keys.
func listenerDynamicTLS(configs map[string]string, listener string) map[string]string {
	out := map[string]string{}
	for k, v := range configs {
		if l, _, ok := configdef.ListenerSSLKey(k); ok && l == strings.ToLower(listener) {
			out[k] = v
		}
	}
	return out
}

// rebuildTLS builds listener's server side from dynamic and checks it may
// replace the current one.
func rebuildTLS(listener string, lt *ListenerTLS, dynamic map[string]string) (*tls.Config, error) {
	next, err := lt.Rebuild(dynamic)
	if err != nil {
		return nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: listener %s: %w", listener, err)
	}
	if err := compatibleKeyStores(lt, lt.server(), next); err != nil {
		return nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: listener %s: %w", listener, err)
	}
	if lt.server().ClientCAs == nil && next.ClientCAs != nil {
		return nil, fmt.Errorf("Validation of dynamic config update of SSLFactory failed: listener %s: "+
			"Cannot add SSL truststore to an existing listener for which no truststore was configured.", listener)
	}
	return next, nil
}

// compatibleKeyStores refuses a new certificate of another subject, or
// one without all of the old one's subject alternative names, as Kafka's
// SslFactory.CertificateEntries.ensureCompatible.
func compatibleKeyStores(lt *ListenerTLS, old, next *tls.Config) error {
	oldLeaf, err := leaf(old)
	if err != nil {
		return err
	}
	newLeaf, err := leaf(next)
	if err != nil {
		return err
	}
	if !lt.AllowDNChanges && oldLeaf.Subject.String() != newLeaf.Subject.String() {
		return fmt.Errorf("Keystore DistinguishedName does not match:  existing={DN=%s}, new={DN=%s}", oldLeaf.Subject, newLeaf.Subject)
	}
	if !lt.AllowSANChanges {
		have := subjectAltNames(newLeaf)
		for _, san := range subjectAltNames(oldLeaf) {
			if !slices.Contains(have, san) {
				return fmt.Errorf("Keystore SubjectAltNames do not match:  existing={SAN=%v}, new={SAN=%v}", subjectAltNames(oldLeaf), have)
			}
		}
	}
	return nil
}

func leaf(c *tls.Config) (*x509.Certificate, error) {
	if len(c.Certificates) == 0 || len(c.Certificates[0].Certificate) == 0 {
		return nil, fmt.Errorf("no certificate in the key store")
	}
	if l := c.Certificates[0].Leaf; l != nil {
		return l, nil
	}
	return x509.ParseCertificate(c.Certificates[0].Certificate[0])
}

// subjectAltNames lists a certificate's DNS names, IP addresses, e-mail
// addresses and URIs.
func subjectAltNames(c *x509.Certificate) []string {
	out := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	out = append(out, c.EmailAddresses...)
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	return out
}

// checkListenerTLS checks that this node's dynamic configs becoming
// configs would give every SSL listener whose keys change a server side it
// may take: the check a node makes of a change to its own resource before
// it is made.
func (b *services) checkListenerTLS(configs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(b.cfg.ListenerTLS)) {
		lt := b.cfg.ListenerTLS[name]
		if lt.Rebuild == nil {
			continue
		}
		dynamic := listenerDynamicTLS(configs, name)
		if maps.Equal(dynamic, listenerDynamicTLS(b.ownConfigs(b.meta.Image()), name)) {
			continue
		}
		if _, err := rebuildTLS(name, lt, dynamic); err != nil {
			return fmt.Errorf("%w: %w", err, kerr.InvalidRequest)
		}
	}
	return nil
}

// ownConfigs are this node's dynamic broker configs in img.
func (b *services) ownConfigs(img *metadata.Image) map[string]string {
	return img.Configs.Of(metadata.ConfigResource{Type: metadata.BrokerResource, Name: strconv.Itoa(int(b.cfg.NodeID))})
}

// reloadListenerTLS rebuilds the server side of every SSL listener that
// has dynamic keys in img, or had them (back to the static keys), or all
// of them when force (a request named this node's resource).
func (b *services) reloadListenerTLS(old, img *metadata.Image, force bool) {
	for _, name := range slices.Sorted(maps.Keys(b.cfg.ListenerTLS)) {
		lt := b.cfg.ListenerTLS[name]
		if lt.Rebuild == nil {
			continue
		}
		dynamic := listenerDynamicTLS(b.ownConfigs(img), name)
		before := map[string]string{}
		if old != nil {
			before = listenerDynamicTLS(b.ownConfigs(old), name)
		}
		if !force && maps.Equal(dynamic, before) {
			continue
		}
		next, err := rebuildTLS(name, lt, dynamic)
		if err != nil {
			b.logger.Error("cannot reload a listener's TLS; it keeps its key and trust stores", zap.String("listener", name), zap.Error(err))
			continue
		}
		lt.live.Store(next)
		b.logger.Info("reloaded a listener's TLS", zap.String("listener", name), zap.Strings("dynamic configs", slices.Sorted(maps.Keys(dynamic))))
	}
}

// reloadingTLS makes AlterConfigs and IncrementalAlterConfigs that change
// this node's own resource reload the listeners' TLS once they succeed,
// whether or not a value changed, wherever they were served (here or by
// the active controller).
func reloadingTLS(r *registry, node int32) {
	own := strconv.Itoa(int(node))
	for _, k := range []kmsg.Key{kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs} {
		a, ok := r.apis[int16(k)]
		if !ok {
			continue
		}
		serve := a.serve
		a.serve = func(rc *reqCtx) (kmsg.Response, error) {
			resp, err := serve(rc)
			if err != nil || len(rc.svc.cfg.ListenerTLS) == 0 {
				return resp, err
			}
			changed := false
			switch resp := resp.(type) {
			case *kmsg.AlterConfigsResponse:
				changed = !rc.req.Body.(*kmsg.AlterConfigsRequest).ValidateOnly && slices.ContainsFunc(resp.Resources, func(r kmsg.AlterConfigsResponseResource) bool {
					return r.ResourceType == kmsg.ConfigResourceTypeBroker && r.ResourceName == own && r.ErrorCode == 0
				})
			case *kmsg.IncrementalAlterConfigsResponse:
				changed = !rc.req.Body.(*kmsg.IncrementalAlterConfigsRequest).ValidateOnly && slices.ContainsFunc(resp.Resources, func(r kmsg.IncrementalAlterConfigsResponseResource) bool {
					return r.ResourceType == kmsg.ConfigResourceTypeBroker && r.ResourceName == own && r.ErrorCode == 0
				})
			}
			if changed {
				img := rc.svc.meta.Image()
				rc.svc.reloadListenerTLS(img, img, true)
			}
			return resp, nil
		}
		r.apis[int16(k)] = a
	}
}
