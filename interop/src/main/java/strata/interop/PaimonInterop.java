package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.CoreOptions;
import org.apache.paimon.Snapshot;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.BucketEntry;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.DeletionFile;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Apache Paimon's own reader, writer and compactor on a bare table directory, for Strata's
 * interop tests (interop/README.md). Only Paimon's Java API: the table is opened with
 * FileStoreTableFactory on Paimon's LocalFileIO (BufferedLocalFileIO buffers its single-byte
 * reads), not through a catalog, because Strata writes a table directory and no catalog
 * around it.
 *
 * <pre>
 *   read    &lt;tableDir&gt; [--snapshot N | --tag T] [--out F] rows as JSON lines, ordered by primary key
 *   meta    &lt;tableDir&gt; [--snapshot N] [--out F]        snapshots, files, options as one JSON object
 *   write   &lt;tableDir&gt; [--schema JSON] [--in F] [--out F] JSON lines as one commit (creates the table if absent)
 *   compact &lt;tableDir&gt; [--full] [--out F]              Paimon's compaction of every bucket, one commit
 *   tag-create &lt;tableDir&gt; --name N [--snapshot S] [--time-retained D]   Paimon's createTag
 *   tag-delete &lt;tableDir&gt; --name N                   Paimon's deleteTag
 *   batch                                            commands from stdin, one JSON array of arguments a line
 * </pre>
 */
public final class PaimonInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private PaimonInterop() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: read|meta|write|compact|expire|tag-create|tag-delete|add-column <tableDir> …, or batch (see interop/README.md)");
            System.exit(2);
        }
        if (args[0].equals("batch")) {
            System.exit(batch());
        }
        try {
            run(args, false);
        } catch (Exception e) {
            System.err.println("error: " + describe(e));
            System.exit(1);
        }
    }

    /**
     * Runs one command a stdin line in this JVM (a JVM start and Paimon's class loading cost
     * about a second, a read of a small table far less). Each command writes its data to its
     * `--out` file; stdout gets one status line per command, and a failed command does not
     * stop the ones after it, so a test learns which cell failed and why.
     */
    private static int batch() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter status = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode result = MAPPER.createObjectNode();
            try {
                List<String> args = JsonValues.strings(MAPPER.readTree(line));
                run(args.toArray(new String[0]), true);
                result.put("ok", true);
            } catch (Exception | LinkageError e) {
                // a class Paimon could not load (a missing Hadoop class, say) fails that command only
                result.put("ok", false);
                result.put("error", describe(e));
            }
            status.println(MAPPER.writeValueAsString(result));
        }
        return 0;
    }

    private static void run(String[] args, boolean inBatch) throws Exception {
        if (ChangelogCommands.handles(args)) { ChangelogCommands.run(args, inBatch); return; }
        if (CatalogCommands.handles(args)) { CatalogCommands.run(args, inBatch); return; }
        Args a = new Args(args);
        if (inBatch && a.out == null) throw new IllegalArgumentException("a batch command needs --out (stdout carries the status lines)");
        try (OutputStream os = a.out == null ? nonClosing(System.out) : new FileOutputStream(a.out);
                PrintWriter out = new PrintWriter(new OutputStreamWriter(os, StandardCharsets.UTF_8))) {
            switch (a.command) {
                case "read":
                    read(a, out);
                    break;
                case "meta":
                    meta(a, out);
                    break;
                case "write":
                    write(a, out);
                    break;
                case "compact":
                    compact(a, out);
                    break;
                case "expire":
                    expire(a, out);
                    break;
                case "tag-create":
                    tagCreate(a, out);
                    break;
                case "tag-delete":
                    tagDelete(a, out);
                    break;
                case "incremental": IncrementalInterop.run(args, out); break;
                case "postpone-compact": PostponeInterop.run(args, out); break;
                case "streaming": StreamingInterop.run(args, out); break;
                case "nested-agg": NestedAggInterop.run(args, out); break;
                case "file-formats": FileFormatInterop.run(args, out); break;
                case "dyn-write": DynamicBucketInterop.run(args, out); break;
                case "nested-create": NestedInterop.run(args, out); break;
                case "add-column":
                    addColumn(a, out);
                    break;
                case "alter": SchemaAlter.run(a.table, a.in, out); break;
                default:
                    throw new IllegalArgumentException("unknown command '" + a.command + "' (read, meta, write, compact, expire, add-column, batch)");
            }
        }
    }

    private static FileStoreTable open(String dir) {
        return FileStoreTableFactory.create(new BufferedLocalFileIO(), path(dir));
    }

    /** Absolute, so the table's `path` option does not depend on the working directory. */
    private static Path path(String dir) {
        return new Path(new File(dir).getAbsolutePath());
    }

    /**
     * The spill and lookup directory of a write: Paimon's lookup (deletion vectors, first-row,
     * lookup changelog) keeps its local files there and refuses to run without one.
     */
    private static IOManager ioManager() {
        return IOManager.create(System.getProperty("java.io.tmpdir"));
    }

    private static FileStoreTable atSnapshot(FileStoreTable table, Long snapshot) {
        return snapshot == null ? table : table.copy(Collections.singletonMap(CoreOptions.SCAN_SNAPSHOT_ID.key(), snapshot.toString()));
    }

    /** The table read at `--tag` (Paimon's `scan.tag-name`), else at `--snapshot`, else the latest. */
    private static FileStoreTable readAt(Args a) throws Exception {
        if (a.tag != null && a.snapshot != null) throw new IllegalArgumentException("read: --tag and --snapshot together");
        FileStoreTable table = open(a.table);
        if (a.tag != null) return table.copy(Collections.singletonMap(CoreOptions.SCAN_TAG_NAME.key(), a.tag));
        return atSnapshot(table, a.snapshot);
    }

    private static void read(Args a, PrintWriter out) throws Exception {
        printRows(readAt(a), out);
    }

    /** Paimon's batch read (merged, retractions dropped), every column, ordered by primary key (also `catalog-read`). */
    static void printRows(Table table, PrintWriter out) throws Exception {
        RowType type = table.rowType();
        List<String> keys = table.primaryKeys();
        ReadBuilder rb = table.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        List<Object[]> sortKeys = new ArrayList<>();
        List<String> lines = new ArrayList<>();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            // the reader reuses its row objects: each row is rendered before the next one
            reader.forEachRemaining(row -> {
                sortKeys.add(JsonValues.sortKey(type, keys, row));
                lines.add(JsonValues.rowToJson(type, row).toString());
            });
        }
        Integer[] order = new Integer[lines.size()];
        for (int i = 0; i < order.length; i++) order[i] = i;
        Arrays.sort(order, (x, y) -> JsonValues.compareKeys(sortKeys.get(x), sortKeys.get(y)));
        for (int i : order) out.println(lines.get(i));
    }

    /** What Paimon sees: snapshots, the effective options, and one snapshot's files by level. */
    private static void meta(Args a, PrintWriter out) throws Exception {
        FileStoreTable base = open(a.table);
        ObjectNode root = MAPPER.createObjectNode();
        ArrayNode snapshots = root.putArray("snapshots");
        Iterator<Snapshot> it = base.snapshotManager().snapshots();
        while (it.hasNext()) {
            Snapshot s = it.next();
            ObjectNode n = snapshots.addObject();
            n.put("id", s.id());
            n.put("kind", s.commitKind().toString());
            n.put("schemaId", s.schemaId());
            n.put("totalRecordCount", s.totalRecordCount());
            n.put("deltaRecordCount", s.deltaRecordCount());
        }
        Long latest = base.snapshotManager().latestSnapshotId();
        Long id = a.snapshot != null ? a.snapshot : latest;
        root.put("latestSnapshot", latest);
        root.put("snapshot", id);
        ObjectNode schema = root.putObject("schema");
        schema.put("id", base.schema().id());
        base.primaryKeys().forEach(schema.putArray("primaryKeys")::add);
        base.partitionKeys().forEach(schema.putArray("partitionKeys")::add);
        // the stored options, not the table's (which add the `path` it was opened with)
        JsonValues.putAll(schema.putObject("options"), new SchemaManager(new BufferedLocalFileIO(), path(a.table)).latest().orElseThrow().options());
        // how Paimon interprets the options (a missing `bucket`, for one, is not 1)
        CoreOptions co = base.coreOptions();
        ObjectNode effective = root.putObject("effective");
        effective.put("bucket", co.bucket());
        effective.put("mergeEngine", co.mergeEngine().toString());
        effective.put("deletionVectors", co.deletionVectorsEnabled());
        effective.put("fileFormat", co.formatType());
        ArrayNode files = root.putArray("files");
        if (id != null) {
            FileStoreTable table = atSnapshot(base, id);
            // deletion vectors as the batch scan hands them to its readers, by data file
            Map<String, Long> deleted = new HashMap<>();
            for (DataSplit split : table.newReadBuilder().newScan().plan().splits().stream().map(DataSplit.class::cast).toList()) {
                Optional<List<DeletionFile>> dvs = split.deletionFiles();
                if (dvs.isEmpty()) continue;
                for (int i = 0; i < split.dataFiles().size(); i++) {
                    DeletionFile f = dvs.get().get(i);
                    if (f != null) deleted.put(split.dataFiles().get(i).fileName(), f.cardinality());
                }
            }
            RowType partitionType = table.schema().logicalPartitionType();
            List<ObjectNode> entries = new ArrayList<>();
            for (ManifestEntry e : table.store().newScan().withSnapshot(id).plan().files()) {
                DataFileMeta f = e.file();
                ObjectNode n = MAPPER.createObjectNode();
                n.set("partition", JsonValues.partitionToJson(partitionType, e.partition()));
                n.put("bucket", e.bucket());
                n.put("level", f.level());
                n.put("fileName", f.fileName());
                n.put("rowCount", f.rowCount());
                n.put("deleteRowCount", f.deleteRowCount().orElse(null));
                n.put("minSequenceNumber", f.minSequenceNumber());
                n.put("maxSequenceNumber", f.maxSequenceNumber());
                n.put("deletionVectorCardinality", deleted.get(f.fileName()));
                entries.add(n);
            }
            entries.sort(Comparator.comparing((ObjectNode n) -> n.get("partition").toString())
                    .thenComparingInt(n -> n.get("bucket").asInt())
                    .thenComparingInt(n -> n.get("level").asInt())
                    .thenComparing(n -> n.get("fileName").asText()));
            entries.forEach(files::add);
        }
        out.println(MAPPER.writeValueAsString(root));
    }

    /**
     * Creates the table when the directory has no schema yet, then writes every input line as
     * one batch commit. `--schema` is the JSON Strata's `create --schema` takes: fields (name,
     * type as Paimon's SQL type string), primaryKeys, partitionKeys, options.
     */
    private static void write(Args a, PrintWriter out) throws Exception {
        SchemaManager schemas = new SchemaManager(new BufferedLocalFileIO(), path(a.table));
        Schema create = null;
        if (schemas.latest().isEmpty()) {
            if (a.schema == null) throw new IllegalArgumentException("no table at " + a.table + " and no --schema to create one");
            create = schemaFromJson(MAPPER.readTree(a.schema));
        }
        // every line is parsed before anything is created or written
        RowType type = create != null ? create.rowType() : open(a.table).rowType();
        List<GenericRow> rows = new ArrayList<>();
        try (InputStream is = a.in == null ? System.in : new FileInputStream(a.in);
                BufferedReader in = new BufferedReader(new InputStreamReader(is, StandardCharsets.UTF_8))) {
            String line;
            int n = 0;
            while ((line = in.readLine()) != null) {
                n++;
                if (line.isBlank()) continue;
                rows.add(JsonValues.rowFromJson(type, MAPPER.readTree(line), "line " + n));
            }
        }
        if (create != null) schemas.createTable(create);
        FileStoreTable table = open(a.table);
        BatchWriteBuilder wb = table.newBatchWriteBuilder();
        try (IOManager io = ioManager(); BatchTableWrite w = wb.newWrite().withIOManager(io); BatchTableCommit c = wb.newCommit()) {
            for (GenericRow row : rows) w.write(row);
            c.commit(w.prepareCommit());
        }
        printLatest(table, out);
    }

    /**
     * A type as SQL text: an atomic type, or ARRAY&lt;t&gt; / MAP&lt;k, v&gt; of them (nested
     * types, so the suite can check how Strata refuses a table that has one).
     */
    private static DataType parseType(String text) {
        String t = text.trim();
        String upper = t.toUpperCase();
        if (upper.startsWith("ARRAY<") && t.endsWith(">")) return DataTypes.ARRAY(parseType(t.substring(6, t.length() - 1)));
        if (upper.startsWith("MAP<") && t.endsWith(">")) {
            String inner = t.substring(4, t.length() - 1);
            int depth = 0;
            for (int i = 0; i < inner.length(); i++) {
                char c = inner.charAt(i);
                if (c == '<') depth++;
                else if (c == '>') depth--;
                else if (c == ',' && depth == 0) return DataTypes.MAP(parseType(inner.substring(0, i)), parseType(inner.substring(i + 1)));
            }
            throw new IllegalArgumentException("MAP type needs a key and a value type: " + text);
        }
        return DataTypeJsonParser.parseAtomicTypeSQLString(t);
    }

    private static Schema schemaFromJson(JsonNode json) {
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : json.get("fields")) {
            JsonNode description = f.get("description");
            b.column(f.get("name").asText(), parseType(f.get("type").asText()), description == null ? null : description.asText());
        }
        b.primaryKey(JsonValues.strings(json.get("primaryKeys")));
        b.partitionKeys(JsonValues.strings(json.get("partitionKeys")));
        JsonNode options = json.get("options");
        if (options != null) options.fields().forEachRemaining(e -> b.option(e.getKey(), e.getValue().asText()));
        return b.build();
    }

    /**
     * Paimon's compaction of every (partition, bucket) of the latest snapshot in one commit:
     * `--full` rewrites each bucket into the top level, without it each bucket is compacted
     * only if Paimon's universal compaction picks something.
     */
    private static void compact(Args a, PrintWriter out) throws Exception {
        FileStoreTable table = open(a.table);
        if (table.snapshotManager().latestSnapshotId() != null) {
            List<BucketEntry> buckets = table.newSnapshotReader().bucketEntries();
            BatchWriteBuilder wb = table.newBatchWriteBuilder();
            try (IOManager io = ioManager(); BatchTableWrite w = wb.newWrite().withIOManager(io); BatchTableCommit c = wb.newCommit()) {
                for (BucketEntry b : buckets) w.compact(b.partition(), b.bucket(), a.full);
                c.commit(w.prepareCommit());
            }
        }
        printLatest(table, out);
    }

    /**
     * Paimon's snapshot expiration keeping the latest `--retain` snapshots (at least one),
     * whatever their age, with no cap on how many one call removes; prints how many it removed.
     */
    private static void expire(Args a, PrintWriter out) throws Exception {
        if (a.retain == null || a.retain < 1) throw new IllegalArgumentException("expire: expected --retain <snapshots to keep, at least 1>");
        FileStoreTable table = open(a.table);
        ExpireConfig config = ExpireConfig.builder()
                .snapshotRetainMin(a.retain)
                .snapshotRetainMax(a.retain)
                .snapshotTimeRetain(Duration.ZERO)
                .snapshotMaxDeletes(Integer.MAX_VALUE)
                .build();
        int expired = table.newExpireSnapshots().config(config).expire();
        ObjectNode n = MAPPER.createObjectNode();
        n.put("expired", expired);
        n.put("snapshot", table.snapshotManager().latestSnapshotId());
        out.println(MAPPER.writeValueAsString(n));
    }

    /**
     * Paimon's `createTag`: `--name N` on the latest snapshot or `--snapshot S`, with
     * `--time-retained D` (ISO-8601, e.g. PT1H) the retention Paimon then writes into the tag
     * file with the creation time. Prints the tag's snapshot id.
     */
    private static void tagCreate(Args a, PrintWriter out) throws Exception {
        if (a.name == null) throw new IllegalArgumentException("tag-create: expected --name <tag>");
        FileStoreTable table = open(a.table);
        Duration retained = a.timeRetained == null ? null : Duration.parse(a.timeRetained);
        if (a.snapshot != null && retained != null) table.createTag(a.name, a.snapshot, retained);
        else if (a.snapshot != null) table.createTag(a.name, a.snapshot);
        else if (retained != null) table.createTag(a.name, retained);
        else table.createTag(a.name);
        ObjectNode n = MAPPER.createObjectNode();
        n.put("snapshot", table.tagManager().getOrThrow(a.name).id());
        out.println(MAPPER.writeValueAsString(n));
    }

    /** Paimon's `deleteTag` (`--name N`): the tag file and, when its snapshot has expired, the files only it kept. */
    private static void tagDelete(Args a, PrintWriter out) throws Exception {
        if (a.name == null) throw new IllegalArgumentException("tag-delete: expected --name <tag>");
        FileStoreTable table = open(a.table);
        table.tagManager().getOrThrow(a.name);
        table.deleteTag(a.name);
        ObjectNode n = MAPPER.createObjectNode();
        n.put("deleted", a.name);
        out.println(MAPPER.writeValueAsString(n));
    }

    /**
     * Paimon's ALTER TABLE ADD COLUMN (`--column NAME TYPE`, the type as `write --schema`
     * spells it): a new schema version; files already written keep the older one. Prints the
     * new schema id.
     */
    private static void addColumn(Args a, PrintWriter out) throws Exception {
        if (a.column == null || a.column.length != 2) throw new IllegalArgumentException("add-column: expected --column <name> <type>");
        SchemaManager schemas = new SchemaManager(new BufferedLocalFileIO(), path(a.table));
        schemas.commitChanges(SchemaChange.addColumn(a.column[0], parseType(a.column[1])));
        ObjectNode n = MAPPER.createObjectNode();
        n.put("schema", schemas.latest().orElseThrow().id());
        out.println(MAPPER.writeValueAsString(n));
    }

    private static void printLatest(FileStoreTable table, PrintWriter out) throws Exception {
        ObjectNode n = MAPPER.createObjectNode();
        n.put("snapshot", table.snapshotManager().latestSnapshotId());
        out.println(MAPPER.writeValueAsString(n));
    }

    private static String describe(Throwable e) {
        StringBuilder s = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (s.length() > 0) s.append(" / caused by: ");
            s.append(t.getClass().getName()).append(": ").append(t.getMessage());
            if (t.getCause() == t) break;
        }
        return s.toString();
    }

    private static OutputStream nonClosing(OutputStream os) {
        return new java.io.FilterOutputStream(os) {
            @Override
            public void close() throws java.io.IOException {
                flush();
            }
        };
    }

    /** The arguments of one command: the command, its table directory and its flags. */
    private static final class Args {
        final String command;
        final String table;
        Long snapshot;
        String schema;
        String in;
        String out;
        boolean full;
        Integer retain;
        String[] column;
        String name;
        String tag;
        String timeRetained;

        Args(String[] args) throws Exception {
            command = args[0];
            if (args.length < 2 || args[1].startsWith("--")) throw new IllegalArgumentException(command + ": expected a table directory");
            table = args[1];
            for (int i = 2; i < args.length; i++) {
                String flag = args[i];
                if (flag.equals("--full")) {
                    full = true;
                    continue;
                }
                if (flag.equals("--column")) {
                    if (i + 2 >= args.length) throw new IllegalArgumentException("--column needs a name and a type");
                    column = new String[] {args[++i], args[++i]};
                    continue;
                }
                if (i + 1 >= args.length) throw new IllegalArgumentException(flag + " needs a value");
                String v = args[++i];
                switch (flag) {
                    case "--snapshot":
                        snapshot = Long.parseLong(v);
                        break;
                    case "--schema":
                        // inline JSON, or a file holding it
                        schema = v.trim().startsWith("{") ? v : Files.readString(Paths.get(v));
                        break;
                    case "--in":
                        in = v;
                        break;
                    case "--out":
                        out = v;
                        break;
                    case "--retain":
                        retain = Integer.parseInt(v);
                        break;
                    case "--name":
                        name = v;
                        break;
                    case "--tag":
                        tag = v;
                        break;
                    case "--time-retained":
                        timeRetained = v;
                        break;
                    default:
                        throw new IllegalArgumentException("unknown flag " + flag);
                }
            }
        }
    }
}
