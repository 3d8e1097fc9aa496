package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.CatalogOptions;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.types.DataTypeJsonParser;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * A Paimon warehouse through Paimon's own filesystem catalog
 * ({@code CatalogFactory.createCatalog(CatalogContext.create(options))} with {@code warehouse}),
 * as Flink, Spark and Trino open one, for Strata's warehouse interop test
 * (test/interop-catalog.test.ts). Parses its own flags (PaimonInterop dispatches to it):
 *
 * <pre>
 *   catalog-list  &lt;warehouse&gt; [--out F]                     {"databases": {"db": ["table", …], …}}
 *   catalog-read  &lt;warehouse&gt; &lt;db.table&gt; [--out F]          rows as `read` prints them
 *   catalog-write &lt;warehouse&gt; &lt;db.table&gt; [--schema S] [--in F] [--out F]
 *                 creates the database and the table when absent, then writes F as one commit
 * </pre>
 */
final class CatalogCommands {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private CatalogCommands() {}

    static boolean handles(String[] args) {
        return args.length > 0 && args[0].startsWith("catalog-");
    }

    static void run(String[] args, boolean inBatch) throws Exception {
        String command = args[0];
        List<String> positional = new ArrayList<>();
        String outFile = null;
        String schema = null;
        String in = null;
        for (int i = 1; i < args.length; i++) {
            if (!args[i].startsWith("--")) {
                positional.add(args[i]);
                continue;
            }
            if (i + 1 >= args.length) throw new IllegalArgumentException(args[i] + " needs a value");
            String v = args[++i];
            switch (args[i - 1]) {
                case "--out":
                    outFile = v;
                    break;
                case "--schema":
                    // inline JSON, or a file holding it
                    schema = v.trim().startsWith("{") ? v : Files.readString(Paths.get(v));
                    break;
                case "--in":
                    in = v;
                    break;
                default:
                    throw new IllegalArgumentException(command + ": unknown flag " + args[i - 1] + " (--schema, --in, --out)");
            }
        }
        if (inBatch && outFile == null) throw new IllegalArgumentException("a batch command needs --out (stdout carries the status lines)");
        int wanted = command.equals("catalog-list") ? 1 : 2;
        if (positional.size() != wanted) throw new IllegalArgumentException(command + ": expected " + (wanted == 1 ? "<warehouse>" : "<warehouse> <db.table>"));
        // one catalog per command: Paimon's caching catalog would keep what an earlier command listed
        try (Catalog catalog = catalog(positional.get(0));
                PrintWriter out = new PrintWriter(new OutputStreamWriter(outFile == null ? new FileOutputStream(FileDescriptor.out) : new FileOutputStream(outFile), StandardCharsets.UTF_8))) {
            switch (command) {
                case "catalog-list":
                    list(catalog, out);
                    break;
                case "catalog-read":
                    PaimonInterop.printRows(catalog.getTable(Identifier.fromString(positional.get(1))), out);
                    break;
                case "catalog-write":
                    write(catalog, Identifier.fromString(positional.get(1)), schema, in, out);
                    break;
                default:
                    throw new IllegalArgumentException("unknown command '" + command + "' (catalog-list, catalog-read, catalog-write)");
            }
        }
    }

    /** Paimon's filesystem catalog on the warehouse, as an engine creates it from its options. */
    private static Catalog catalog(String warehouse) {
        Options options = new Options();
        options.set(CatalogOptions.WAREHOUSE, new File(warehouse).getAbsolutePath());
        return CatalogFactory.createCatalog(CatalogContext.create(options));
    }

    /** Every database the catalog lists (sorted) and its tables. */
    private static void list(Catalog catalog, PrintWriter out) throws Exception {
        ObjectNode root = MAPPER.createObjectNode();
        ObjectNode databases = root.putObject("databases");
        List<String> names = new ArrayList<>(catalog.listDatabases());
        names.sort(null);
        for (String db : names) catalog.listTables(db).forEach(databases.putArray(db)::add);
        out.println(MAPPER.writeValueAsString(root));
    }

    /**
     * Paimon's CREATE DATABASE IF NOT EXISTS and CREATE TABLE (when `--schema` is given and the
     * table is absent) through the catalog, then the JSON lines of `--in` as one batch commit.
     * The schema is `write --schema`'s JSON, with atomic types only. Prints the snapshot id.
     */
    private static void write(Catalog catalog, Identifier id, String schemaJson, String in, PrintWriter out) throws Exception {
        catalog.createDatabase(id.getDatabaseName(), true);
        if (schemaJson != null) catalog.createTable(id, schema(MAPPER.readTree(schemaJson)), true);
        Table table = catalog.getTable(id);
        List<GenericRow> rows = new ArrayList<>();
        if (in != null) {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(new FileInputStream(in), StandardCharsets.UTF_8))) {
                String line;
                int n = 0;
                while ((line = r.readLine()) != null) {
                    n++;
                    if (!line.isBlank()) rows.add(JsonValues.rowFromJson(table.rowType(), MAPPER.readTree(line), "line " + n));
                }
            }
        }
        BatchWriteBuilder wb = table.newBatchWriteBuilder();
        // the spill directory Paimon's lookup needs (deletion vectors, first-row)
        try (IOManager io = IOManager.create(System.getProperty("java.io.tmpdir"));
                BatchTableWrite w = wb.newWrite().withIOManager(io);
                BatchTableCommit c = wb.newCommit()) {
            for (GenericRow row : rows) w.write(row);
            c.commit(w.prepareCommit());
        }
        ObjectNode n = MAPPER.createObjectNode();
        n.put("table", id.getFullName());
        out.println(MAPPER.writeValueAsString(n));
    }

    private static Schema schema(JsonNode json) {
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : json.get("fields")) b.column(f.get("name").asText(), DataTypeJsonParser.parseAtomicTypeSQLString(f.get("type").asText()));
        b.primaryKey(JsonValues.strings(json.get("primaryKeys")));
        b.partitionKeys(JsonValues.strings(json.get("partitionKeys")));
        JsonNode options = json.get("options");
        if (options != null) options.fields().forEachRemaining(e -> b.option(e.getKey(), e.getValue().asText()));
        return b.build();
    }
}
