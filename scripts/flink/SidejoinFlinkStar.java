// The Flink SQL peer of sidejoin's star-join benchmark (scripts/bench-kafka.sh, modes star-flink-*):
// a fact topic enriched by two dimension topics, the chain
//   fact JOIN dim1 ON d1 = id1 JOIN dim2 ON d2 = id2      (shape=star, the default)
//   fact JOIN dim1 ON d1 = id1 JOIN dim2 ON region = id2  (shape=chain: dim2 looked up on dim1's column)
// with upsert-kafka tables in and out, as a Flink 2.2 SQL job at parallelism 1 in one JVM (a local
// MiniCluster). The same query sidejoin runs from SIDEJOIN_SQL (without its BROADCAST hint, which
// Flink's regular joins do not know). Compiled and started by scripts/flink.sh
// (FLINK_JOB_CLASS=SidejoinFlinkStar); see scripts/flink/README.md.
//
//   java -cp classes:lib/* SidejoinFlinkStar key=value ...
//     bootstrap=HOST:PORT   the broker (required)
//     fact=TOPIC dim1=TOPIC dim2=TOPIC output=TOPIC   (defaults star-fact, star-dim1, star-dim2,
//                           out-star-flink)
//     shape=star|chain      which column dim2 is looked up on (default star)
//     join=inner|left       both joins' type (default inner, the seed's)
//     backend=rocksdb|hashmap   state.backend.type (default rocksdb)
//     checkpoint.dir=DIR    checkpoint storage (required; a local directory)
//     checkpoint.interval=10s   execution.checkpointing.interval
//     checkpoint.mode=AT_LEAST_ONCE   execution.checkpointing.mode
//     group=ID              properties.group.id of the sources (default sidejoin-bench-flink-star)
//     producer.K=V, consumer.K=V, flink.K=V   as SidejoinFlinkJoin
//
// The column lists are those of examples/bench_produce.rs (`star`). The job runs until the JVM is
// stopped (upsert-kafka sources are unbounded and always start from the earliest offsets).

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

public final class SidejoinFlinkStar {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("arguments are key=value, got: " + a);
            }
            args.put(a.substring(0, eq), a.substring(eq + 1));
        }
        String bootstrap = required(args, "bootstrap");
        String fact = args.getOrDefault("fact", "star-fact");
        String dim1 = args.getOrDefault("dim1", "star-dim1");
        String dim2 = args.getOrDefault("dim2", "star-dim2");
        String output = args.getOrDefault("output", "out-star-flink");
        String backend = args.getOrDefault("backend", "rocksdb");
        String group = args.getOrDefault("group", "sidejoin-bench-flink-star");
        String checkpointDir = required(args, "checkpoint.dir");
        String dim2On = switch (args.getOrDefault("shape", "star")) {
            case "star" -> "d2";
            case "chain" -> "region";
            default -> throw new IllegalArgumentException("shape is star or chain");
        };
        String join = switch (args.getOrDefault("join", "inner")) {
            case "inner" -> "JOIN";
            case "left" -> "LEFT JOIN";
            default -> throw new IllegalArgumentException("join is inner or left");
        };

        Map<String, String> flink = new LinkedHashMap<>();
        flink.put("parallelism.default", "1");
        flink.put("table.exec.resource.default-parallelism", "1");
        flink.put("state.backend.type", backend);
        flink.put("execution.checkpointing.interval", args.getOrDefault("checkpoint.interval", "10s"));
        flink.put("execution.checkpointing.mode", args.getOrDefault("checkpoint.mode", "AT_LEAST_ONCE"));
        flink.put("execution.checkpointing.storage", "filesystem");
        flink.put("execution.checkpointing.dir", "file://" + checkpointDir);
        flink.put("execution.checkpointing.incremental", "true");
        flink.put("pipeline.name", "sidejoin-bench-flink-star-" + backend);
        // The MiniCluster's REST endpoint and servers on loopback only (they default to all interfaces).
        flink.put("rest.bind-address", "127.0.0.1");
        flink.put("rest.address", "127.0.0.1");
        flink.put("jobmanager.bind-host", "127.0.0.1");
        flink.put("jobmanager.rpc.address", "127.0.0.1");
        flink.put("taskmanager.bind-host", "127.0.0.1");
        flink.put("taskmanager.host", "127.0.0.1");
        StringBuilder producer = new StringBuilder();
        StringBuilder consumer = new StringBuilder();
        for (Map.Entry<String, String> e : args.entrySet()) {
            String k = e.getKey();
            if (k.startsWith("flink.")) {
                flink.put(k.substring("flink.".length()), e.getValue());
            } else if (k.startsWith("producer.")) {
                producer.append(",\n  'properties.").append(k.substring("producer.".length()))
                        .append("' = '").append(e.getValue()).append("'");
            } else if (k.startsWith("consumer.")) {
                consumer.append(",\n  'properties.").append(k.substring("consumer.".length()))
                        .append("' = '").append(e.getValue()).append("'");
            }
        }
        Configuration conf = Configuration.fromMap(flink);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(
                env, EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());

        String common = "  'connector' = 'upsert-kafka',\n"
                + "  'properties.bootstrap.servers' = '" + bootstrap + "',\n"
                + "  'key.format' = 'json',\n"
                + "  'value.format' = 'json',\n"
                + "  'value.fields-include' = 'ALL'";
        String source = common + ",\n  'properties.group.id' = '" + group + "'" + consumer;
        tEnv.executeSql("CREATE TABLE fact (\n"
                + "  id BIGINT, d1 BIGINT, d2 BIGINT, qty BIGINT, amount BIGINT, ts BIGINT,\n"
                + "  PRIMARY KEY (id) NOT ENFORCED\n"
                + ") WITH (\n  'topic' = '" + fact + "',\n" + source + "\n)");
        tEnv.executeSql("CREATE TABLE dim1 (\n"
                + "  id1 BIGINT, name1 STRING, region BIGINT, ts1 BIGINT,\n"
                + "  PRIMARY KEY (id1) NOT ENFORCED\n"
                + ") WITH (\n  'topic' = '" + dim1 + "',\n" + source + "\n)");
        tEnv.executeSql("CREATE TABLE dim2 (\n"
                + "  id2 BIGINT, name2 STRING, tier BIGINT, ts2 BIGINT,\n"
                + "  PRIMARY KEY (id2) NOT ENFORCED\n"
                + ") WITH (\n  'topic' = '" + dim2 + "',\n" + source + "\n)");
        tEnv.executeSql("CREATE TABLE o (\n"
                + "  id BIGINT, d1 BIGINT, d2 BIGINT, qty BIGINT, amount BIGINT, ts BIGINT,\n"
                + "  name1 STRING, region BIGINT, name2 STRING, tier BIGINT,\n"
                + "  PRIMARY KEY (id) NOT ENFORCED\n"
                + ") WITH (\n  'topic' = '" + output + "',\n" + common + ",\n"
                + "  'value.json.encode.ignore-null-fields' = 'true',\n"
                + "  'sink.delivery-guarantee' = 'at-least-once'" + producer + "\n)");
        String insert = "INSERT INTO o\n"
                + "SELECT id, d1, d2, qty, amount, ts, name1, region, name2, tier\n"
                + "FROM fact " + join + " dim1 ON d1 = id1 " + join + " dim2 ON " + dim2On + " = id2";
        System.err.println("sidejoin-flink: configuration " + flink);
        System.err.println("sidejoin-flink: " + insert.replace('\n', ' '));
        System.err.println(tEnv.explainSql(insert));
        TableResult result = tEnv.executeSql(insert);
        System.err.println("sidejoin-flink: job submitted "
                + result.getJobClient().map(c -> c.getJobID().toString()).orElse("?"));
        result.await();
    }

    private static String required(Map<String, String> args, String key) {
        String v = args.get(key);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("missing argument " + key + "=...");
        }
        return v;
    }
}
