package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.PrintWriter;
import java.nio.file.Files;
import org.apache.paimon.fs.Path;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.types.DataTypeJsonParser;

/**
 * Creates a table whose columns may be nested, for test/interop-nested.test.ts:
 *
 * <pre>
 *   nested-create &lt;tableDir&gt; --schema F [--out F]
 * </pre>
 *
 * The schema is the JSON Strata's `create --schema` takes, each field's type either a SQL
 * string of an atomic type or Paimon's JSON form of a nested one (what SchemaSerializer
 * writes, `{"type": "ARRAY", "element": …}`, ROW fields without ids), parsed by Paimon's own
 * DataTypeJsonParser; the columns are added through Schema.Builder, which numbers the nested
 * fields as Paimon does. The harness's `write`, `read` and `compact` then work on the table
 * (JsonValues renders nested values). Prints the table's schema file.
 */
final class NestedInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper PAIMON_JSON = new org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper();

    private NestedInterop() {}

    static void run(String[] args, PrintWriter out) throws Exception {
        String table = null;
        String schemaFile = null;
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--schema")) schemaFile = args[++i];
            else if (args[i].equals("--out")) i++;
            else if (table == null) table = args[i];
            else throw new IllegalArgumentException("nested-create: unexpected argument " + args[i]);
        }
        if (table == null || schemaFile == null) throw new IllegalArgumentException("nested-create: expected <tableDir> --schema <file>");
        JsonNode json = MAPPER.readTree(new File(schemaFile));
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : json.get("fields")) {
            JsonNode type = f.get("type");
            // Paimon's parser takes its own (shaded) Jackson's nodes
            b.column(f.get("name").asText(), type.isTextual() ? DataTypeJsonParser.parseAtomicTypeSQLString(type.asText()) : DataTypeJsonParser.parseDataType(PAIMON_JSON.readTree(type.toString())));
        }
        b.primaryKey(JsonValues.strings(json.get("primaryKeys")));
        b.partitionKeys(JsonValues.strings(json.get("partitionKeys")));
        JsonNode options = json.get("options");
        if (options != null) options.fields().forEachRemaining(e -> b.option(e.getKey(), e.getValue().asText()));
        Path path = new Path(new File(table).getAbsolutePath());
        new SchemaManager(new BufferedLocalFileIO(), path).createTable(b.build());
        out.println(new String(Files.readAllBytes(new File(table, "schema/schema-0").toPath()), java.nio.charset.StandardCharsets.UTF_8));
    }
}
