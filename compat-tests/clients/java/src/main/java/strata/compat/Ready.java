package strata.compat;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;

/** Waiting for a topic to be ready, and the replica check of describe_topic, for any replication factor. */
final class Ready {
    private Ready() {}

    /** One Metadata answer about a topic: the broker IDs (null when the call does not list them) and each partition's leader (-1: none). */
    record TopicMeta(Set<Integer> brokers, int[] leaders) {}

    interface MetadataCall { TopicMeta get() throws Exception; }

    interface ServedCall { void check() throws Exception; }

    /**
     * Polls every 200 ms, until the time `until` (ms), until the topic is ready: metadata shows exactly n partitions,
     * each led by a broker the same answer lists, and then served returns, a ListOffsets of every partition that its
     * leader answers only once it holds the partition (Kafka publishes Metadata before its replica manager has
     * created the partitions). An exception of either means not yet. Returns n.
     */
    static int waitReady(String name, int n, long until, MetadataCall metadata, ServedCall served) throws Exception {
        String last = "no answer";
        for (;;) {
            try {
                last = notReady(metadata.get(), n);
                if (last.isEmpty()) {
                    served.check();
                    return n;
                }
            } catch (ExecutionException e) {
                last = Runner.describe(e.getCause());
            } catch (Runner.Outcome e) {
                throw e;
            } catch (Exception e) {
                last = Runner.describe(e);
            }
            if (System.currentTimeMillis() >= until) throw Runner.fail("topic " + name + " never had " + n + " partitions with a leader serving them: " + last);
            Thread.sleep(200);
        }
    }

    static String notReady(TopicMeta m, int n) {
        if (m.leaders().length != n) return m.leaders().length + " partitions";
        for (int p = 0; p < n; p++) {
            int l = m.leaders()[p];
            if (l < 0) return "partition " + p + " has no leader";
            if (m.brokers() != null && !m.brokers().contains(l)) return "partition " + p + ": leader " + l + " is not among the brokers " + m.brokers();
        }
        return "";
    }

    /** describe_topic's check of one partition on a topic created with rf: rf distinct replicas, the leader among them, ISR = replicas. */
    static void checkReplicas(TopicPartitionInfo p, int rf) {
        Node l = p.leader();
        Set<Integer> reps = new HashSet<>();
        for (Node r : p.replicas()) reps.add(r.id());
        Set<Integer> isr = new HashSet<>();
        for (Node r : p.isr()) isr.add(r.id());
        boolean ok = l != null && !l.isEmpty() && p.replicas().size() == rf && reps.size() == rf && reps.contains(l.id())
                && p.isr().size() == rf && isr.equals(reps);
        if (!ok) throw Runner.fail("partition " + p.partition() + ": leader " + l + " replicas " + p.replicas() + " isr " + p.isr()
                + " (want " + rf + " replicas, the leader among them, ISR = replicas)");
    }
}
