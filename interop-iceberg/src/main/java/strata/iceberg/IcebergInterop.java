package strata.iceberg;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.SnapshotUtil;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Apache Iceberg's own Java library on the Iceberg metadata beside a table, for Strata's
 * interop tests (interop-iceberg/README.md). The table is opened read-only from one metadata
 * JSON file with StaticTableOperations and BaseTable, on a local FileIO of the harness's own
 * (LocalFileIO), so neither a catalog nor Hadoop is involved; a metadata directory is resolved
 * to its file through `version-hint.text`, as Iceberg's HadoopTableOperations does.
 *
 * <pre>
 *   read &lt;location&gt; [--snapshot N [--current-schema]] [--filter JSON] [--out F]   every row of IcebergGenerics, one JSON object a line
 *   meta &lt;location&gt; [--snapshot N] [--out F]   format version, snapshot, schema, spec, data and delete files
 *   batch                                      commands from stdin, one JSON array of arguments a line
 * </pre>
 */
public final class IcebergInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private IcebergInterop() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: read|meta <metadata location> [--snapshot N] [--out F], or batch (see interop-iceberg/README.md)");
            System.exit(2);
        }
        if (args[0].equals("batch")) System.exit(batch());
        try {
            run(args, false);
        } catch (Exception e) {
            System.err.println("error: " + describe(e));
            System.exit(1);
        }
    }

    /**
     * One command a stdin line in this JVM, since a JVM start and Iceberg's class loading cost
     * far more than reading a small table. Each command writes its data to its `--out` file;
     * stdout gets one status line per command, and a failed command does not stop the rest.
     */
    private static int batch() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter status = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode result = MAPPER.createObjectNode();
            try {
                List<String> args = new ArrayList<>();
                MAPPER.readTree(line).forEach(n -> args.add(n.asText()));
                run(args.toArray(new String[0]), true);
                result.put("ok", true);
            } catch (Exception | LinkageError e) {
                result.put("ok", false);
                result.put("error", describe(e));
            }
            status.println(MAPPER.writeValueAsString(result));
        }
        return 0;
    }

    private static void run(String[] args, boolean inBatch) throws Exception {
        String command = args[0];
        String location = null;
        String out = null;
        Long snapshot = null;
        boolean currentSchema = false;
        String filter = null;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--out":
                    out = value(args, ++i);
                    break;
                case "--snapshot":
                    snapshot = Long.parseLong(value(args, ++i));
                    break;
                case "--current-schema":
                    currentSchema = true;
                    break;
                case "--filter":
                    filter = value(args, ++i);
                    break;
                default:
                    if (args[i].startsWith("--") || location != null) throw new IllegalArgumentException("unexpected argument '" + args[i] + "'");
                    location = args[i];
            }
        }
        if (location == null) throw new IllegalArgumentException(command + ": a metadata location is needed");
        if (inBatch && out == null) throw new IllegalArgumentException("a batch command needs --out (stdout carries the status lines)");
        Table table = open(location);
        try (OutputStream os = out == null ? nonClosing(System.out) : new FileOutputStream(out);
                PrintWriter w = new PrintWriter(new OutputStreamWriter(os, StandardCharsets.UTF_8))) {
            switch (command) {
                case "read":
                    read(table, snapshot, currentSchema, filter == null ? null : Filters.parse(MAPPER.readTree(filter), table.schema()), w);
                    break;
                case "meta":
                    w.println(MAPPER.writeValueAsString(meta(table, snapshot)));
                    break;
                default:
                    throw new IllegalArgumentException("unknown command '" + command + "' (read, meta, batch)");
            }
        }
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) throw new IllegalArgumentException(args[i - 1] + " needs a value");
        return args[i];
    }

    /**
     * The table at a metadata JSON file, or at the newest version of a metadata directory (or
     * of a table directory holding `metadata/`): `version-hint.text` holds N, the file is
     * `vN.metadata.json` (or `vN.gz.metadata.json`), as HadoopTableOperations resolves it.
     */
    static Table open(String location) throws Exception {
        File f = LocalFileIO.local(location);
        String metadataFile;
        if (f.isFile()) {
            metadataFile = f.getPath();
        } else {
            File dir = new File(f, "version-hint.text").isFile() ? f : new File(f, "metadata");
            File hint = new File(dir, "version-hint.text");
            if (!hint.isFile()) throw new IllegalArgumentException("no version-hint.text in " + f + " or " + dir);
            String version = Files.readString(hint.toPath(), StandardCharsets.UTF_8).trim();
            File plain = new File(dir, "v" + version + ".metadata.json");
            File gz = new File(dir, "v" + version + ".gz.metadata.json");
            if (plain.isFile()) metadataFile = plain.getPath();
            else if (gz.isFile()) metadataFile = gz.getPath();
            else throw new IllegalArgumentException("version-hint.text names version " + version + ", but " + plain + " is missing");
        }
        StaticTableOperations ops = new StaticTableOperations(metadataFile, new LocalFileIO());
        return new BaseTable(ops, metadataFile);
    }

    /**
     * IcebergGenerics' read of the current or given snapshot (deletes applied), every column
     * of the snapshot's schema (Iceberg's time travel), or with `currentSchema` of the table's
     * current schema, matched by field id (as Paimon and Strata read an older snapshot); with a
     * filter, Iceberg's planner prunes manifests and files by their partition summaries and
     * column bounds, and the reader drops the rows the residual rejects;
     * ordered by the identifier fields when the schema has them, else by the whole rendered row.
     */
    private static void read(Table table, Long snapshot, boolean currentSchema, Expression filter, PrintWriter out) throws Exception {
        IcebergGenerics.ScanBuilder scan = IcebergGenerics.read(table);
        if (filter != null) scan = scan.where(filter);
        if (snapshot != null) scan = scan.useSnapshot(snapshot);
        if (currentSchema) scan = scan.project(table.schema());
        Schema schema = snapshot == null || currentSchema ? table.schema() : SnapshotUtil.schemaFor(table, snapshot);
        List<String> keyNames = new ArrayList<>(schema.identifierFieldNames());
        List<String[]> rows = new ArrayList<>();
        try (CloseableIterable<Record> records = scan.build()) {
            for (Record r : records) {
                ObjectNode row = JsonValues.recordToJson(schema.asStruct(), r);
                ArrayNode key = MAPPER.createArrayNode();
                for (String k : keyNames) key.add(row.get(k));
                String line = MAPPER.writeValueAsString(row);
                rows.add(new String[] {keyNames.isEmpty() ? line : MAPPER.writeValueAsString(key), line});
            }
        }
        rows.sort(Comparator.comparing((String[] r) -> r[0]));
        for (String[] r : rows) out.println(r[1]);
    }

    /** The metadata a reader acts on, at the current or given snapshot, as one JSON object. */
    private static ObjectNode meta(Table table, Long snapshotId) throws Exception {
        TableMetadata md = ((BaseTable) table).operations().current();
        ObjectNode out = MAPPER.createObjectNode();
        out.put("formatVersion", md.formatVersion());
        out.put("location", md.location());
        out.put("lastSequenceNumber", md.lastSequenceNumber());
        if (md.formatVersion() >= 3) out.put("nextRowId", md.nextRowId());
        out.put("currentSnapshotId", md.currentSnapshot() == null ? null : md.currentSnapshot().snapshotId());
        ArrayNode snapshots = out.putArray("snapshots");
        for (Snapshot s : md.snapshots()) snapshots.add(s.snapshotId());
        out.put("currentSchemaId", md.currentSchemaId());
        out.set("properties", MAPPER.valueToTree(md.properties()));

        Snapshot snap = snapshotId == null ? md.currentSnapshot() : md.snapshot(snapshotId);
        if (snapshotId != null && snap == null) throw new IllegalArgumentException("no snapshot " + snapshotId + " in the metadata");
        Schema schema = snap == null || snap.schemaId() == null ? md.schema() : md.schemasById().get(snap.schemaId());
        out.set("schema", schemaJson(schema));
        PartitionSpec spec = md.spec();
        out.set("spec", specJson(spec));
        if (snap == null) return out;

        ObjectNode s = out.putObject("snapshot");
        s.put("id", snap.snapshotId());
        s.put("sequenceNumber", snap.sequenceNumber());
        s.put("parentId", snap.parentId());
        s.put("schemaId", snap.schemaId());
        s.put("operation", snap.operation());
        if (md.formatVersion() >= 3) {
            s.put("firstRowId", snap.firstRowId());
            s.put("addedRows", snap.addedRows());
        }
        s.set("summary", MAPPER.valueToTree(snap.summary()));

        Map<Integer, PartitionSpec> specs = md.specsById();
        // the manifest list: what a planner prunes whole manifests by (partition summaries)
        ArrayNode manifests = out.putArray("manifests");
        for (ManifestFile m : snap.allManifests(table.io())) {
            ObjectNode mf = manifests.addObject();
            mf.put("content", m.content().name());
            mf.put("addedFiles", m.addedFilesCount());
            mf.put("existingFiles", m.existingFilesCount());
            mf.put("firstRowId", m.firstRowId());
            Types.StructType partitionType = specs.get(m.partitionSpecId()).partitionType();
            if (m.partitions() == null) mf.putNull("partitions");
            else {
                ArrayNode summaries = mf.putArray("partitions");
                for (int i = 0; i < m.partitions().size(); i++) {
                    ManifestFile.PartitionFieldSummary p = m.partitions().get(i);
                    Types.NestedField field = partitionType.fields().get(i);
                    ObjectNode summary = summaries.addObject();
                    summary.put("containsNull", p.containsNull());
                    summary.set("lower", p.lowerBound() == null ? null : JsonValues.valueToJson(field.type(), org.apache.iceberg.types.Conversions.fromByteBuffer(field.type(), p.lowerBound())));
                    summary.set("upper", p.upperBound() == null ? null : JsonValues.valueToJson(field.type(), org.apache.iceberg.types.Conversions.fromByteBuffer(field.type(), p.upperBound())));
                }
            }
        }
        ArrayNode dataFiles = out.putArray("dataFiles");
        for (ManifestFile m : snap.dataManifests(table.io())) {
            try (ManifestReader<DataFile> r = ManifestFiles.read(m, table.io(), specs)) {
                for (DataFile f : r) dataFiles.add(fileJson(f, specs));
            }
        }
        ArrayNode deleteFiles = out.putArray("deleteFiles");
        for (ManifestFile m : snap.deleteManifests(table.io())) {
            try (ManifestReader<DeleteFile> r = ManifestFiles.readDeleteManifest(m, table.io(), specs)) {
                for (DeleteFile f : r) {
                    ObjectNode d = fileJson(f, specs);
                    d.put("referencedDataFile", f.referencedDataFile());
                    d.put("contentOffset", f.contentOffset());
                    d.put("contentSizeInBytes", f.contentSizeInBytes());
                    deleteFiles.add(d);
                }
            }
        }
        // what Iceberg's planner hands a reader: each data file with the deletes it applies
        ArrayNode tasks = out.putArray("tasks");
        TableScan scan = table.newScan().useSnapshot(snap.snapshotId());
        try (CloseableIterable<FileScanTask> planned = scan.planFiles()) {
            for (FileScanTask t : planned) {
                ObjectNode task = tasks.addObject();
                task.put("file", t.file().location());
                ArrayNode deletes = task.putArray("deletes");
                for (DeleteFile d : t.deletes()) deletes.add(d.location() + (d.contentOffset() == null ? "" : "@" + d.contentOffset()));
            }
        }
        return out;
    }

    private static ObjectNode schemaJson(Schema schema) {
        ObjectNode out = MAPPER.createObjectNode();
        out.put("schemaId", schema.schemaId());
        ArrayNode fields = out.putArray("fields");
        for (Types.NestedField f : schema.columns()) {
            ObjectNode field = fields.addObject();
            field.put("id", f.fieldId());
            field.put("name", f.name());
            field.put("type", f.type().toString());
            field.put("required", f.isRequired());
        }
        ArrayNode ids = out.putArray("identifierFieldIds");
        schema.identifierFieldIds().stream().sorted().forEach(ids::add);
        return out;
    }

    private static ObjectNode specJson(PartitionSpec spec) {
        ObjectNode out = MAPPER.createObjectNode();
        out.put("specId", spec.specId());
        ArrayNode fields = out.putArray("fields");
        for (PartitionField f : spec.fields()) {
            ObjectNode field = fields.addObject();
            field.put("sourceId", f.sourceId());
            field.put("fieldId", f.fieldId());
            field.put("name", f.name());
            field.put("transform", f.transform().toString());
        }
        return out;
    }

    private static ObjectNode fileJson(ContentFile<?> f, Map<Integer, PartitionSpec> specs) {
        ObjectNode out = MAPPER.createObjectNode();
        out.put("content", f.content().name());
        out.put("path", f.location());
        out.put("format", f.format().name());
        out.put("specId", f.specId());
        out.set("partition", JsonValues.structToJson(specs.get(f.specId()).partitionType(), f.partition()));
        out.put("recordCount", f.recordCount());
        out.put("fileSizeInBytes", f.fileSizeInBytes());
        out.put("dataSequenceNumber", f.dataSequenceNumber());
        out.put("fileSequenceNumber", f.fileSequenceNumber());
        if (f.firstRowId() != null) out.put("firstRowId", f.firstRowId());
        // the columns whose metrics a planner prunes by: field ids with a lower and an upper bound, with null counts
        out.set("boundedColumns", MAPPER.valueToTree(f.lowerBounds() == null || f.upperBounds() == null ? List.of()
                : f.lowerBounds().keySet().stream().filter(f.upperBounds()::containsKey).sorted().toList()));
        out.set("nullCountedColumns", MAPPER.valueToTree(f.nullValueCounts() == null ? List.of() : f.nullValueCounts().keySet().stream().sorted().toList()));
        return out;
    }

    private static OutputStream nonClosing(OutputStream os) {
        return new java.io.FilterOutputStream(os) {
            @Override
            public void close() throws java.io.IOException {
                flush();
            }
        };
    }

    /** The exception and its causes, one line: what Iceberg said, not a stack trace. */
    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (sb.length() > 0) sb.append(" <- ");
            sb.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
            if (t.getCause() == t) break;
        }
        return sb.toString();
    }
}
