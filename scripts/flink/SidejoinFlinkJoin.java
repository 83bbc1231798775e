// The Flink SQL peer of sidejoin's Kafka benchmark (scripts/bench-kafka.sh): the join the bench
// configures sidejoin with (left LEFT JOIN right ON id, primary keys on both sides, upsert output),
// as a Flink 2.2 SQL job at parallelism 1 in one JVM (a local MiniCluster), reading and writing the
// same broker. Compiled and started by scripts/flink.sh; see scripts/flink/README.md.
//
//   java -cp classes:lib/* SidejoinFlinkJoin key=value ...
//     bootstrap=HOST:PORT   the broker (required)
//     left=TOPIC right=TOPIC output=TOPIC   (defaults left, right, out-flink)
//     backend=rocksdb|hashmap   state.backend.type (default rocksdb)
//     checkpoint.dir=DIR    checkpoint storage (required; a local directory)
//     checkpoint.interval=10s   execution.checkpointing.interval
//     checkpoint.mode=AT_LEAST_ONCE   execution.checkpointing.mode
//     group=ID              properties.group.id of both sources (default sidejoin-bench-flink)
//     producer.K=V          extra sink producer properties (e.g. producer.linger.ms=5)
//     consumer.K=V          extra source consumer properties
//     flink.K=V             any other Flink configuration option
//
// The column lists are those of examples/bench_produce.rs. The output columns and their names are
// sidejoin's default SELECT (l.*, r.*): a clashing right column gets the suffix 0 (id0, ts0).
// The job runs until the JVM is stopped (upsert-kafka sources are unbounded and always start from
// the earliest offsets).

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

public final class SidejoinFlinkJoin {
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
        String left = args.getOrDefault("left", "left");
        String right = args.getOrDefault("right", "right");
        String output = args.getOrDefault("output", "out-flink");
        String backend = args.getOrDefault("backend", "rocksdb");
        String group = args.getOrDefault("group", "sidejoin-bench-flink");
        String checkpointDir = required(args, "checkpoint.dir");

        Map<String, String> flink = new LinkedHashMap<>();
        flink.put("parallelism.default", "1");
        flink.put("table.exec.resource.default-parallelism", "1");
        flink.put("state.backend.type", backend);
        flink.put("execution.checkpointing.interval", args.getOrDefault("checkpoint.interval", "10s"));
        flink.put("execution.checkpointing.mode", args.getOrDefault("checkpoint.mode", "AT_LEAST_ONCE"));
        flink.put("execution.checkpointing.storage", "filesystem");
        flink.put("execution.checkpointing.dir", "file://" + checkpointDir);
        flink.put("execution.checkpointing.incremental", "true");
        flink.put("pipeline.name", "sidejoin-bench-flink-" + backend);
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
        tEnv.executeSql("CREATE TABLE l (\n"
                + "  id BIGINT, name STRING, city STRING, age BIGINT, ts BIGINT,\n"
                + "  PRIMARY KEY (id) NOT ENFORCED\n"
                + ") WITH (\n  'topic' = '" + left + "',\n" + source + "\n)");
        tEnv.executeSql("CREATE TABLE r (\n"
                + "  id BIGINT, score BIGINT, level BIGINT, tag STRING, ts BIGINT,\n"
                + "  PRIMARY KEY (id) NOT ENFORCED\n"
                + ") WITH (\n  'topic' = '" + right + "',\n" + source + "\n)");
        tEnv.executeSql("CREATE TABLE o (\n"
                + "  id BIGINT, name STRING, city STRING, age BIGINT, ts BIGINT,\n"
                + "  id0 BIGINT, score BIGINT, level BIGINT, tag STRING, ts0 BIGINT,\n"
                + "  PRIMARY KEY (id) NOT ENFORCED\n"
                + ") WITH (\n  'topic' = '" + output + "',\n" + common + ",\n"
                + "  'value.json.encode.ignore-null-fields' = 'true',\n"
                + "  'sink.delivery-guarantee' = 'at-least-once'" + producer + "\n)");
        String insert = "INSERT INTO o\n"
                + "SELECT l.id, l.name, l.city, l.age, l.ts, r.id AS id0, r.score, r.level, r.tag, r.ts AS ts0\n"
                + "FROM l LEFT JOIN r ON l.id = r.id";
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
