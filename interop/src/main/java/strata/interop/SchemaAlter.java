package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.casting.CastExecutor;
import org.apache.paimon.casting.CastExecutors;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeCasts;
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
 *
 * <p>`alter - --in F` where F is an object {"pairs": [[from, to], …], "casts": [{"from", "to",
 * "value"}, …]}: Paimon's judgement of type changes and its casts, no table. Per pair, a line
 * {"implicit", "explicit"}: whether SchemaManager's check (DataTypeCasts.supportsCast, without
 * and with explicit casts, and a CastExecutors rule) allows it. Per cast, a line {"value"} with
 * the cast value rendered as `read` renders it (the input in `write`'s form), or {"error"}.
 */
final class SchemaAlter {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private SchemaAlter() {}

    static void run(String table, String in, PrintWriter out) throws Exception {
        if (in == null) throw new IllegalArgumentException("alter: expected --in <file of a JSON array of changes>");
        JsonNode changes = MAPPER.readTree(Files.readString(Paths.get(in)));
        if (changes.isObject()) {
            casts(changes, out);
            return;
        }
        if (!changes.isArray() || changes.isEmpty()) throw new IllegalArgumentException("alter: expected a non-empty JSON array of changes");
        List<SchemaChange> list = new ArrayList<>();
        for (JsonNode c : changes) list.add(change(c));
        SchemaManager schemas = new SchemaManager(new BufferedLocalFileIO(), new Path(new File(table).getAbsolutePath()));
        schemas.commitChanges(list);
        ObjectNode n = MAPPER.createObjectNode();
        n.put("schema", schemas.latest().orElseThrow().id());
        out.println(MAPPER.writeValueAsString(n));
    }

    private static void casts(JsonNode in, PrintWriter out) throws Exception {
        JsonNode pairs = in.get("pairs");
        if (pairs != null) {
            for (JsonNode p : pairs) {
                DataType from = DataTypeJsonParser.parseAtomicTypeSQLString(p.get(0).asText());
                DataType to = DataTypeJsonParser.parseAtomicTypeSQLString(p.get(1).asText());
                boolean resolves = CastExecutors.resolve(from, to) != null;
                ObjectNode n = MAPPER.createObjectNode();
                n.put("implicit", DataTypeCasts.supportsCast(from, to, false) && resolves);
                n.put("explicit", DataTypeCasts.supportsCast(from, to, true) && resolves);
                out.println(MAPPER.writeValueAsString(n));
            }
        }
        JsonNode casts = in.get("casts");
        if (casts != null) {
            for (JsonNode c : casts) {
                DataType from = DataTypeJsonParser.parseAtomicTypeSQLString(c.get("from").asText());
                DataType to = DataTypeJsonParser.parseAtomicTypeSQLString(c.get("to").asText());
                ObjectNode n = MAPPER.createObjectNode();
                try {
                    @SuppressWarnings("unchecked")
                    CastExecutor<Object, Object> cast = (CastExecutor<Object, Object>) CastExecutors.resolve(from, to);
                    if (cast == null) throw new IllegalArgumentException("no cast from " + from + " to " + to);
                    Object value = cast.cast(JsonValues.valueFromJson(from, c.get("value")));
                    n.set("value", JsonValues.valueToJson(to, GenericRow.of(value), 0));
                } catch (Exception e) {
                    n.put("error", String.valueOf(e.getMessage()));
                }
                out.println(MAPPER.writeValueAsString(n));
            }
        }
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
