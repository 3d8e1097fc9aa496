package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.fs.Path;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;

import java.io.File;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * `alter <dir> --in F`: Paimon's ALTER TABLE through SchemaManager.commitChanges, with the
 * changes of F (a JSON array, the shape of Strata's lib/table/alter.ts SchemaChange: kind
 * add-column | rename-column | drop-column | update-column-type | update-column-nullability |
 * update-column-comment | update-comment, with name, newName, type, comment, nullable and a
 * position {"first": true} or {"after": column}) as one new schema version. Prints the new
 * schema id.
 */
final class SchemaAlter {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private SchemaAlter() {}

    static void run(String table, String in, PrintWriter out) throws Exception {
        if (in == null) throw new IllegalArgumentException("alter: expected --in <file of a JSON array of changes>");
        JsonNode changes = MAPPER.readTree(Files.readString(Paths.get(in)));
        if (!changes.isArray() || changes.isEmpty()) throw new IllegalArgumentException("alter: expected a non-empty JSON array of changes");
        List<SchemaChange> list = new ArrayList<>();
        for (JsonNode c : changes) list.add(change(c));
        SchemaManager schemas = new SchemaManager(new BufferedLocalFileIO(), new Path(new File(table).getAbsolutePath()));
        schemas.commitChanges(list);
        ObjectNode n = MAPPER.createObjectNode();
        n.put("schema", schemas.latest().orElseThrow().id());
        out.println(MAPPER.writeValueAsString(n));
    }

    private static String text(JsonNode c, String field) {
        JsonNode v = c.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    private static DataType type(JsonNode c) {
        String t = text(c, "type");
        if (t == null) throw new IllegalArgumentException("alter: change " + c + " needs a type");
        return DataTypeJsonParser.parseAtomicTypeSQLString(t);
    }

    private static SchemaChange change(JsonNode c) {
        String kind = text(c, "kind");
        String name = text(c, "name");
        if (kind == null) throw new IllegalArgumentException("alter: change " + c + " has no kind");
        switch (kind) {
            case "add-column": {
                JsonNode pos = c.get("position");
                SchemaChange.Move move = null;
                if (pos != null && pos.has("first")) move = SchemaChange.Move.first(name);
                else if (pos != null && pos.has("after")) move = SchemaChange.Move.after(name, pos.get("after").asText());
                return SchemaChange.addColumn(name, type(c), text(c, "comment"), move);
            }
            case "rename-column":
                return SchemaChange.renameColumn(name, text(c, "newName"));
            case "drop-column":
                return SchemaChange.dropColumn(name);
            case "update-column-type":
                return SchemaChange.updateColumnType(name, type(c));
            case "update-column-nullability":
                return SchemaChange.updateColumnNullability(name, c.get("nullable").asBoolean());
            case "update-column-comment":
                return SchemaChange.updateColumnComment(name, text(c, "comment"));
            case "update-comment":
                return SchemaChange.updateComment(text(c, "comment"));
            default:
                throw new IllegalArgumentException("alter: unknown change kind '" + kind + "'");
        }
    }
}
