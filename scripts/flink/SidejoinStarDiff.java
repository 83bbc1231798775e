// Flink 2.2 SQL's side of the star-join differential (scripts/flink-star-diff.sh): reads the cases
// file that crates/core/examples/star_differential writes, runs each topology's chain of joins as
// one Flink SQL query over every case of that topology (the `case_no` column joins only rows of one
// case), materialises the result changelog per case and writes it as JSON lines. Parallelism 1, one
// JVM (a local MiniCluster per topology), no Kafka: each source is a changelog stream built from an
// in-memory collection (fromChangelogStream, a RowKind per record). See scripts/flink/README.md.
//
//   java -cp classes:lib/* SidejoinStarDiff CASES_FILE OUTPUT_FILE
//
// The cases file, one item a line, fields separated by one space (`null` is SQL NULL):
//   topology T PK DIM...     T the topology's number; PK one 0/1 per input (1: primary key
//                            (case_no, id)); one DIM per dimension: I or L (INNER or LEFT JOIN),
//                            the input it is looked up on (0 the fact), the column (a or b), so
//                            `L1b` is `LEFT JOIN dN ON s1.case_no = dN.case_no AND s1.b = dN.k`
//   op T CASE SOURCE KIND ID A B K V   a change of input SOURCE (0 the fact) of case CASE of
//                            topology T, KIND one of +I -U +U -D; every input's columns are
//                            case_no, id, a, b, k, v (BIGINT); a source's changes in file order
// The output, one line per chained row of a case's final table with a count other than 0:
//   {"topology":T,"case":C,"count":N,"chain":[{"id":..,"a":..,"b":..,"k":..,"v":..},...]}
// with one object per input in chain order (all null for a null-padded input); a negative count
// would be a retraction of a row the changelog never inserted.

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

public final class SidejoinStarDiff {
    private static final String[] COLUMNS = {"case_no", "id", "a", "b", "k", "v"};

    /** One topology: its inputs' primary-key flags, its dimensions and its sources' changes. */
    private static final class Topology {
        final int number;
        final boolean[] pk;
        final String[] dims;
        final List<List<Row>> sources = new ArrayList<>();

        Topology(int number, String pk, String[] dims) {
            this.number = number;
            this.pk = new boolean[pk.length()];
            for (int i = 0; i < pk.length(); i++) {
                this.pk[i] = pk.charAt(i) == '1';
            }
            if (dims.length + 1 != this.pk.length) {
                throw new IllegalArgumentException("topology " + number + ": " + pk.length()
                        + " primary-key flags for " + dims.length + " dimensions");
            }
            this.dims = dims;
            for (int i = 0; i < this.pk.length; i++) {
                sources.add(new ArrayList<>());
            }
        }
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length != 2) {
            throw new IllegalArgumentException("usage: SidejoinStarDiff CASES_FILE OUTPUT_FILE");
        }
        Map<Integer, Topology> topologies = read(Path.of(argv[0]));
        try (BufferedWriter out = Files.newBufferedWriter(Path.of(argv[1]), StandardCharsets.UTF_8)) {
            for (Topology t : topologies.values()) {
                long start = System.nanoTime();
                int rows = run(t, out);
                System.err.printf("sidejoin-star-diff: topology %d: %d chained rows in %.1f s%n",
                        t.number, rows, (System.nanoTime() - start) / 1e9);
            }
        }
    }

    private static Map<Integer, Topology> read(Path file) throws IOException {
        Map<Integer, Topology> topologies = new TreeMap<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            String[] f = line.split(" ");
            if (f[0].equals("topology")) {
                int n = Integer.parseInt(f[1]);
                String[] dims = new String[f.length - 3];
                System.arraycopy(f, 3, dims, 0, dims.length);
                topologies.put(n, new Topology(n, f[2], dims));
            } else if (f[0].equals("op")) {
                Topology t = topologies.get(Integer.parseInt(f[1]));
                Row row = Row.withPositions(kind(f[4]), COLUMNS.length);
                row.setField(0, Long.parseLong(f[2]));
                for (int c = 1; c < COLUMNS.length; c++) {
                    String v = f[4 + c];
                    row.setField(c, v.equals("null") ? null : Long.parseLong(v));
                }
                t.sources.get(Integer.parseInt(f[3])).add(row);
            } else if (!line.isEmpty() && !line.startsWith("#")) {
                throw new IllegalArgumentException("not a cases line: " + line);
            }
        }
        return topologies;
    }

    private static RowKind kind(String k) {
        switch (k) {
            case "+I": return RowKind.INSERT;
            case "-U": return RowKind.UPDATE_BEFORE;
            case "+U": return RowKind.UPDATE_AFTER;
            case "-D": return RowKind.DELETE;
            default: throw new IllegalArgumentException("not a change kind: " + k);
        }
    }

    /** Runs topology `t`'s query and writes its materialised table per case; returns the rows. */
    private static int run(Topology t, BufferedWriter out) throws Exception {
        Configuration conf = configuration("sidejoin-star-diff-" + t.number);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(
                env, EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
        TypeInformation<?>[] types = new TypeInformation<?>[COLUMNS.length];
        Arrays.fill(types, Types.LONG);
        TypeInformation<Row> rowType = Types.ROW_NAMED(COLUMNS, types);
        for (int i = 0; i < t.pk.length; i++) {
            if (t.sources.get(i).isEmpty()) {
                // fromData of an empty collection fails in the job; a generated case never has one.
                throw new IllegalArgumentException("topology " + t.number + ": input " + i + " has no changes");
            }
            DataStream<Row> stream = env.fromData(t.sources.get(i), rowType);
            Table table = tEnv.fromChangelogStream(stream, schema(t.pk[i]), ChangelogMode.all());
            tEnv.createTemporaryView("s" + i, table);
        }
        String query = query(t);
        System.err.println("sidejoin-star-diff: topology " + t.number + ": " + query);
        System.err.println(tEnv.explainSql(query));
        // case -> chained row (JSON) -> count
        Map<Long, Map<String, Long>> tables = new TreeMap<>();
        try (CloseableIterator<Row> it = tEnv.sqlQuery(query).execute().collect()) {
            while (it.hasNext()) {
                Row r = it.next();
                long delta = r.getKind() == RowKind.INSERT || r.getKind() == RowKind.UPDATE_AFTER ? 1 : -1;
                Map<String, Long> table = tables.computeIfAbsent((Long) r.getField(0), c -> new LinkedHashMap<>());
                table.merge(chain(r, t.pk.length), delta, Long::sum);
            }
        }
        int rows = 0;
        for (Map.Entry<Long, Map<String, Long>> c : tables.entrySet()) {
            for (Map.Entry<String, Long> e : c.getValue().entrySet()) {
                if (e.getValue() != 0) {
                    out.write("{\"topology\":" + t.number + ",\"case\":" + c.getKey() + ",\"count\":"
                            + e.getValue() + ",\"chain\":" + e.getKey() + "}\n");
                    rows++;
                }
            }
        }
        return rows;
    }

    private static Configuration configuration(String name) {
        Map<String, String> flink = new LinkedHashMap<>();
        flink.put("parallelism.default", "1");
        flink.put("table.exec.resource.default-parallelism", "1");
        flink.put("state.backend.type", "hashmap");
        flink.put("pipeline.name", name);
        // The MiniCluster's REST endpoint and servers on loopback only (they default to all interfaces).
        flink.put("rest.bind-address", "127.0.0.1");
        flink.put("rest.address", "127.0.0.1");
        flink.put("jobmanager.bind-host", "127.0.0.1");
        flink.put("jobmanager.rpc.address", "127.0.0.1");
        flink.put("taskmanager.bind-host", "127.0.0.1");
        flink.put("taskmanager.host", "127.0.0.1");
        return Configuration.fromMap(flink);
    }

    private static Schema schema(boolean pk) {
        Schema.Builder b = Schema.newBuilder();
        for (String c : COLUMNS) {
            boolean key = pk && (c.equals("case_no") || c.equals("id"));
            b.column(c, key ? DataTypes.BIGINT().notNull() : DataTypes.BIGINT());
        }
        if (pk) {
            b.primaryKey("case_no", "id");
        }
        return b.build();
    }

    /** SELECT s0.case_no, then every column but case_no of every input, FROM the chain. */
    private static String query(Topology t) {
        StringBuilder select = new StringBuilder("SELECT s0.case_no AS case_no");
        for (int i = 0; i < t.pk.length; i++) {
            for (int c = 1; c < COLUMNS.length; c++) {
                select.append(", s").append(i).append('.').append(COLUMNS[c])
                        .append(" AS s").append(i).append('_').append(COLUMNS[c]);
            }
        }
        StringBuilder from = new StringBuilder(" FROM s0");
        for (int d = 0; d < t.dims.length; d++) {
            String dim = t.dims[d];
            String on = "s" + dim.charAt(1);
            String self = "s" + (d + 1);
            from.append(dim.charAt(0) == 'L' ? " LEFT JOIN " : " JOIN ").append(self)
                    .append(" ON ").append(on).append(".case_no = ").append(self).append(".case_no AND ")
                    .append(on).append('.').append(dim.substring(2)).append(" = ").append(self).append(".k");
        }
        return select.append(from).toString();
    }

    /** The chained row of result row `r` as a JSON array of one object per input. */
    private static String chain(Row r, int inputs) {
        StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < inputs; i++) {
            s.append(i == 0 ? "{" : ",{");
            for (int c = 1; c < COLUMNS.length; c++) {
                Object v = r.getField(1 + i * (COLUMNS.length - 1) + c - 1);
                s.append(c == 1 ? "" : ",").append('"').append(COLUMNS[c]).append("\":").append(v);
            }
            s.append('}');
        }
        return s.append(']').toString();
    }
}
