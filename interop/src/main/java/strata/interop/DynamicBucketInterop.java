package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.RowType;

/**
 * Paimon's own write of a dynamic-bucket table (bucket -1), for
 * test/interop-dynamic-bucket.test.ts:
 *
 * <pre>
 *   dyn-write &lt;tableDir&gt; --in F [--schema JSON] [--out F]
 * </pre>
 *
 * Creates the table from `--schema` (fields with atomic SQL types, primaryKeys,
 * partitionKeys, options) when the directory has none, then writes every input line (a JSON
 * object, `_kind` +I by default) as one batch commit, each row to the bucket Paimon's
 * HashBucketAssigner gives its trimmed primary key's hash against the latest snapshot's HASH
 * index (one assigner, as HashBucketAssignerOperator with parallelism 1), so the commit also
 * rewrites the HASH index files. Prints {"snapshot": N}.
 */
final class DynamicBucketInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private DynamicBucketInterop() {}

    static void run(String[] args, PrintWriter out) throws Exception {
        if (args.length < 2 || args[1].startsWith("--")) throw new IllegalArgumentException("dyn-write: expected a table directory");
        String dir = args[1];
        String in = null;
        String schema = null;
        for (int i = 2; i + 1 < args.length; i += 2) {
            if (args[i].equals("--in")) in = args[i + 1];
            else if (args[i].equals("--schema")) schema = args[i + 1];
            else if (!args[i].equals("--out")) throw new IllegalArgumentException("dyn-write: unknown argument " + args[i]);
        }
        if (in == null) throw new IllegalArgumentException("dyn-write: --in is required");
        Path path = new Path(new File(dir).getAbsolutePath());
        BufferedLocalFileIO io = new BufferedLocalFileIO();
        SchemaManager schemas = new SchemaManager(io, path);
        if (schemas.latest().isEmpty()) {
            if (schema == null) throw new IllegalArgumentException("no table at " + dir + " and no --schema to create one");
            schemas.createTable(schemaFromJson(MAPPER.readTree(schema)));
        }
        FileStoreTable table = FileStoreTableFactory.create(io, path);
        RowType type = table.rowType();
        List<GenericRow> rows = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(new FileInputStream(in), StandardCharsets.UTF_8))) {
            String line;
            int n = 0;
            while ((line = r.readLine()) != null) {
                n++;
                if (!line.isBlank()) rows.add(JsonValues.rowFromJson(type, MAPPER.readTree(line), "line " + n));
            }
        }
        String commitUser = UUID.randomUUID().toString();
        HashBucketAssigner assigner =
                new HashBucketAssigner(
                        table.snapshotManager(),
                        commitUser,
                        table.store().newIndexFileHandler(),
                        1,
                        1,
                        0,
                        table.coreOptions().dynamicBucketTargetRowNum(),
                        table.coreOptions().dynamicBucketMaxBuckets());
        RowPartitionKeyExtractor extractor = new RowPartitionKeyExtractor(table.schema());
        BatchWriteBuilder wb = table.newBatchWriteBuilder();
        try (IOManager ioManager = IOManager.create(System.getProperty("java.io.tmpdir"));
                BatchTableWrite w = wb.newWrite().withIOManager(ioManager);
                BatchTableCommit c = wb.newCommit()) {
            for (GenericRow row : rows) {
                int bucket = assigner.assign(extractor.partition(row), extractor.trimmedPrimaryKey(row).hashCode());
                w.write(row, bucket);
            }
            c.commit(w.prepareCommit());
        }
        ObjectNode n = MAPPER.createObjectNode();
        n.put("snapshot", table.snapshotManager().latestSnapshotId());
        out.println(MAPPER.writeValueAsString(n));
    }

    private static Schema schemaFromJson(JsonNode json) {
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : json.get("fields")) b.column(f.get("name").asText(), DataTypeJsonParser.parseAtomicTypeSQLString(f.get("type").asText()));
        b.primaryKey(JsonValues.strings(json.get("primaryKeys")));
        b.partitionKeys(JsonValues.strings(json.get("partitionKeys")));
        JsonNode options = json.get("options");
        if (options != null) options.fields().forEachRemaining(e -> b.option(e.getKey(), e.getValue().asText()));
        return b.build();
    }
}
