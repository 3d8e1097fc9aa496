package strata.iceberg;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Base64;
import java.util.List;

/**
 * Iceberg's generic values as JSON, in the Paimon harness's rendering (interop/README.md,
 * "JSON rendering per type") so a test compares Iceberg's rows with Strata's and Paimon's as
 * text. Iceberg's types are coarser than Paimon's, which decides three cases: TINYINT and
 * SMALLINT are Iceberg ints (JSON numbers either way); a `timestamp` is microseconds whatever
 * Paimon's precision 3 to 6, so it renders with exactly 6 fraction digits (Paimon's rendering
 * at precision 6), a `timestamp_ns` with 9; BINARY(n) and VARBINARY are Iceberg `binary`,
 * base64 as before.
 */
final class JsonValues {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private JsonValues() {}

    /**
     * A record as a JSON object, the read schema's field name → rendered value, nulls included,
     * in schema order. By name: a record read with deletes also carries the `_pos` column the
     * delete filter needed, which is not the table's.
     */
    static ObjectNode recordToJson(Types.StructType type, Record record) {
        ObjectNode out = JSON.objectNode();
        for (Types.NestedField f : type.fields()) out.set(f.name(), valueToJson(f.type(), record.getField(f.name())));
        return out;
    }

    /** A partition tuple as field name → rendered value (the spec's partition type). */
    static ObjectNode structToJson(Types.StructType type, StructLike struct) {
        ObjectNode out = JSON.objectNode();
        List<Types.NestedField> fields = type.fields();
        for (int i = 0; i < fields.size(); i++) {
            Type t = fields.get(i).type();
            out.set(fields.get(i).name(), valueToJson(t, struct.get(i, t.typeId().javaClass())));
        }
        return out;
    }

    static JsonNode valueToJson(Type type, Object v) {
        if (v == null) return JSON.nullNode();
        switch (type.typeId()) {
            case BOOLEAN:
                return JSON.booleanNode((Boolean) v);
            case INTEGER:
                return JSON.numberNode((Integer) v);
            case LONG:
                return JSON.textNode(Long.toString((Long) v));
            case FLOAT:
                // the float's exact value as a double, as the Paimon harness renders a FLOAT
                return floating((Float) v);
            case DOUBLE:
                return floating((Double) v);
            case DECIMAL:
                return JSON.textNode(((BigDecimal) v).toPlainString());
            case STRING:
                return JSON.textNode(v.toString());
            case UUID:
                return JSON.textNode(v.toString());
            case BINARY:
            case FIXED:
                return JSON.textNode(Base64.getEncoder().encodeToString(bytes(v)));
            case DATE:
                // partition tuples hold days since the epoch, records a LocalDate
                return JSON.textNode(v instanceof Integer ? java.time.LocalDate.ofEpochDay((Integer) v).toString() : v.toString());
            case TIME:
                return JSON.textNode(v.toString());
            case TIMESTAMP:
                return JSON.textNode(timestamp(v, 6));
            case TIMESTAMP_NANO:
                return JSON.textNode(timestamp(v, 9));
            default:
                throw new IllegalArgumentException("the Iceberg harness does not render " + type + " yet");
        }
    }

    private static JsonNode floating(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) return JSON.textNode(Double.toString(d));
        return JSON.numberNode(d);
    }

    private static byte[] bytes(Object v) {
        if (v instanceof byte[]) return (byte[]) v;
        ByteBuffer b = ((ByteBuffer) v).duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    /**
     * `yyyy-MM-ddTHH:mm:ss.` and exactly `digits` fraction digits; a timestamptz is shown in
     * UTC with a trailing `Z`. Partition tuples hold epoch microseconds (nanoseconds for
     * `timestamp_ns`).
     */
    static String timestamp(Object v, int digits) {
        LocalDateTime t;
        String zone = "";
        if (v instanceof OffsetDateTime) {
            t = ((OffsetDateTime) v).withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime();
            zone = "Z";
        } else if (v instanceof Long) {
            long x = (Long) v;
            long perSecond = digits == 9 ? 1_000_000_000L : 1_000_000L;
            long seconds = Math.floorDiv(x, perSecond);
            long nanos = Math.floorMod(x, perSecond) * (digits == 9 ? 1 : 1000);
            t = LocalDateTime.ofEpochSecond(seconds, (int) nanos, ZoneOffset.UTC);
        } else {
            t = (LocalDateTime) v;
        }
        String base = String.format("%s-%02d-%02dT%02d:%02d:%02d",
                year(t.getYear()), t.getMonthValue(), t.getDayOfMonth(), t.getHour(), t.getMinute(), t.getSecond());
        return base + "." + String.format("%09d", t.getNano()).substring(0, digits) + zone;
    }

    private static String year(int y) {
        return y < 0 ? "-" + String.format("%04d", -y) : String.format("%04d", y);
    }
}
