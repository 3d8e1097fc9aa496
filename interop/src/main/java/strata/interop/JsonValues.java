package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeChecks;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The harness's one JSON rendering of Paimon values, both ways, so a test compares the text
 * of two readers without knowing either's in-memory types (interop/README.md has the table).
 * Every rendering is exact: what JavaScript's JSON.parse would round (BIGINT past 2^53,
 * DECIMAL digits) is a string.
 */
final class JsonValues {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private JsonValues() {}

    /** A row as a JSON object, field name → rendered value, nulls included. */
    static ObjectNode rowToJson(RowType type, InternalRow row) {
        ObjectNode out = JSON.objectNode();
        List<DataField> fields = type.getFields();
        for (int i = 0; i < fields.size(); i++) {
            out.set(fields.get(i).name(), valueToJson(fields.get(i).type(), row, i));
        }
        return out;
    }

    static JsonNode valueToJson(DataType t, InternalRow row, int i) {
        if (row.isNullAt(i)) return JSON.nullNode();
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                return JSON.booleanNode(row.getBoolean(i));
            case TINYINT:
                return JSON.numberNode(row.getByte(i));
            case SMALLINT:
                return JSON.numberNode(row.getShort(i));
            case INTEGER:
                return JSON.numberNode(row.getInt(i));
            case BIGINT:
                return JSON.textNode(Long.toString(row.getLong(i)));
            case FLOAT:
                // the float's exact value as a double: a reader comparing with its own float
                // widened to double sees the same number, not the float's shortest decimal
                return floating(row.getFloat(i));
            case DOUBLE:
                return floating(row.getDouble(i));
            case DECIMAL: {
                int p = DataTypeChecks.getPrecision(t);
                int s = DataTypeChecks.getScale(t);
                return JSON.textNode(row.getDecimal(i, p, s).toBigDecimal().toPlainString());
            }
            case CHAR:
            case VARCHAR:
                return JSON.textNode(row.getString(i).toString());
            case BINARY:
            case VARBINARY:
                return JSON.textNode(Base64.getEncoder().encodeToString(row.getBinary(i)));
            case DATE:
                return JSON.textNode(LocalDate.ofEpochDay(row.getInt(i)).toString());
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                int p = DataTypeChecks.getPrecision(t);
                return JSON.textNode(timestamp(row.getTimestamp(i, p), p));
            }
            case ARRAY:
                return arrayToJson(((ArrayType) t).getElementType(), row.getArray(i));
            case MAP: {
                MapType m = (MapType) t;
                return mapToJson(m.getKeyType(), m.getValueType(), row.getMap(i));
            }
            case MULTISET:
                // Paimon holds a MULTISET as a MAP of element to INT count
                return mapToJson(((MultisetType) t).getElementType(), DataTypes.INT(), row.getMap(i));
            case ROW: {
                RowType r = (RowType) t;
                return rowToJson(r, row.getRow(i, r.getFieldCount()));
            }
            default:
                throw new IllegalArgumentException("the harness does not render " + t.asSQLString() + " yet");
        }
    }

    /** An ARRAY as a JSON array, each element rendered as a field of its type is. */
    static ArrayNode arrayToJson(DataType element, InternalArray a) {
        ArrayNode out = JSON.arrayNode();
        InternalArray.ElementGetter get = InternalArray.createElementGetter(element);
        for (int k = 0; k < a.size(); k++) out.add(valueToJson(element, GenericRow.of(get.getElementOrNull(a, k)), 0));
        return out;
    }

    /** A MAP (or MULTISET) as a JSON array of [key, value] pairs in the map's entry order. */
    static ArrayNode mapToJson(DataType key, DataType value, InternalMap m) {
        ArrayNode out = JSON.arrayNode();
        InternalArray keys = m.keyArray();
        InternalArray values = m.valueArray();
        InternalArray.ElementGetter getKey = InternalArray.createElementGetter(key);
        InternalArray.ElementGetter getValue = InternalArray.createElementGetter(value);
        for (int k = 0; k < m.size(); k++) {
            ArrayNode pair = out.addArray();
            pair.add(valueToJson(key, GenericRow.of(getKey.getElementOrNull(keys, k)), 0));
            pair.add(valueToJson(value, GenericRow.of(getValue.getElementOrNull(values, k)), 0));
        }
        return out;
    }

    private static JsonNode floating(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) return JSON.textNode(Double.toString(d));
        return JSON.numberNode(d);
    }

    /**
     * `yyyy-MM-ddTHH:mm:ss` and exactly `precision` fraction digits; more digits only when the
     * value holds more than its type's precision, so such a value shows rather than rounds.
     */
    static String timestamp(Timestamp ts, int precision) {
        LocalDateTime t = ts.toLocalDateTime();
        String base = String.format("%s-%02d-%02dT%02d:%02d:%02d",
                year(t.getYear()), t.getMonthValue(), t.getDayOfMonth(), t.getHour(), t.getMinute(), t.getSecond());
        String nanos = String.format("%09d", t.getNano());
        int digits = precision;
        for (int k = nanos.length(); k > precision; k--) {
            if (nanos.charAt(k - 1) != '0') {
                digits = k;
                break;
            }
        }
        return digits == 0 ? base : base + "." + nanos.substring(0, digits);
    }

    private static String year(int y) {
        return y < 0 ? "-" + String.format("%04d", -y) : String.format("%04d", y);
    }

    /** Parses one input line: every field by name (absent is null) and `_kind` (+I by default). */
    static GenericRow rowFromJson(RowType type, JsonNode line, String where) {
        if (!line.isObject()) throw new IllegalArgumentException(where + ": expected a JSON object");
        List<DataField> fields = type.getFields();
        for (Iterator<String> it = line.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!name.equals("_kind") && type.getFieldIndex(name) < 0) {
                throw new IllegalArgumentException(where + ": unknown field '" + name + "'");
            }
        }
        RowKind kind = line.has("_kind") ? RowKind.fromShortString(line.get("_kind").asText()) : RowKind.INSERT;
        GenericRow row = new GenericRow(kind, fields.size());
        for (int i = 0; i < fields.size(); i++) {
            DataField f = fields.get(i);
            JsonNode v = line.get(f.name());
            try {
                row.setField(i, v == null || v.isNull() ? null : valueFromJson(f.type(), v));
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(where + ": field '" + f.name() + "' (" + f.type().asSQLString() + "): " + e.getMessage(), e);
            }
        }
        return row;
    }

    /** The internal value of one JSON value; accepts the rendering above and plain JSON numbers. */
    static Object valueFromJson(DataType t, JsonNode v) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                if (!v.isBoolean()) throw new IllegalArgumentException("expected true or false, got " + v);
                return v.booleanValue();
            case TINYINT:
                return (byte) integer(v, Byte.MIN_VALUE, Byte.MAX_VALUE);
            case SMALLINT:
                return (short) integer(v, Short.MIN_VALUE, Short.MAX_VALUE);
            case INTEGER:
                return (int) integer(v, Integer.MIN_VALUE, Integer.MAX_VALUE);
            case BIGINT:
                return integer(v, Long.MIN_VALUE, Long.MAX_VALUE);
            case FLOAT:
                return (float) floating(v);
            case DOUBLE:
                return floating(v);
            case DECIMAL: {
                int p = DataTypeChecks.getPrecision(t);
                int s = DataTypeChecks.getScale(t);
                // no rounding: a value with more fraction digits than the scale is an error
                BigDecimal d = new BigDecimal(v.isTextual() ? v.textValue().trim() : v.asText()).setScale(s, RoundingMode.UNNECESSARY);
                Decimal out = Decimal.fromBigDecimal(d, p, s);
                if (out == null) throw new IllegalArgumentException(v + " does not fit DECIMAL(" + p + ", " + s + ")");
                return out;
            }
            case CHAR:
            case VARCHAR:
                if (!v.isTextual()) throw new IllegalArgumentException("expected a string, got " + v);
                return BinaryString.fromString(v.textValue());
            case BINARY:
            case VARBINARY:
                if (!v.isTextual()) throw new IllegalArgumentException("expected base64 text, got " + v);
                return Base64.getDecoder().decode(v.textValue());
            case DATE:
                return (int) LocalDate.parse(v.textValue()).toEpochDay();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                // both `T` and a space between date and time, as Strata's input takes both
                return Timestamp.fromLocalDateTime(LocalDateTime.parse(v.textValue().replace(' ', 'T')));
            case ARRAY: {
                // the JSON forms Strata's input takes (docs/operations.md "Values in JSON lines")
                if (!v.isArray()) throw new IllegalArgumentException("expected an array, got " + v);
                DataType e = ((ArrayType) t).getElementType();
                Object[] out = new Object[v.size()];
                for (int k = 0; k < out.length; k++) out[k] = nullable(e, v.get(k));
                return new GenericArray(out);
            }
            case MAP: {
                MapType m = (MapType) t;
                Map<Object, Object> out = new LinkedHashMap<>();
                if (v.isObject()) v.fields().forEachRemaining(e -> out.put(valueFromJson(m.getKeyType(), JSON.textNode(e.getKey())), nullable(m.getValueType(), e.getValue())));
                else if (v.isArray()) v.forEach(pair -> out.put(valueFromJson(m.getKeyType(), pair.get(0)), nullable(m.getValueType(), pair.get(1))));
                else throw new IllegalArgumentException("expected an object or an array of [key, value] pairs, got " + v);
                return new GenericMap(out);
            }
            case MULTISET: {
                // an array of elements, each occurrence counted
                if (!v.isArray()) throw new IllegalArgumentException("expected an array of elements, got " + v);
                DataType e = ((MultisetType) t).getElementType();
                Map<Object, Object> out = new LinkedHashMap<>();
                v.forEach(x -> out.merge(valueFromJson(e, x), 1, (a, b) -> (Integer) a + (Integer) b));
                return new GenericMap(out);
            }
            case ROW: {
                RowType r = (RowType) t;
                if (!v.isObject()) throw new IllegalArgumentException("expected an object, got " + v);
                GenericRow out = new GenericRow(r.getFieldCount());
                for (int k = 0; k < r.getFieldCount(); k++) out.setField(k, nullable(r.getTypeAt(k), v.get(r.getFieldNames().get(k))));
                return out;
            }
            default:
                throw new IllegalArgumentException("the harness does not write " + t.asSQLString() + " yet");
        }
    }

    private static Object nullable(DataType t, JsonNode v) {
        return v == null || v.isNull() ? null : valueFromJson(t, v);
    }

    private static long integer(JsonNode v, long min, long max) {
        long x;
        if (v.isIntegralNumber() && v.canConvertToLong()) x = v.longValue();
        else if (v.isTextual() && v.textValue().matches("-?\\d+")) x = Long.parseLong(v.textValue());
        else throw new IllegalArgumentException("expected an integer, got " + v);
        if (x < min || x > max) throw new IllegalArgumentException(v + " is out of range");
        return x;
    }

    private static double floating(JsonNode v) {
        if (v.isNumber()) return v.doubleValue();
        if (v.isTextual()) {
            switch (v.textValue()) {
                case "NaN":
                    return Double.NaN;
                case "Infinity":
                    return Double.POSITIVE_INFINITY;
                case "-Infinity":
                    return Double.NEGATIVE_INFINITY;
                default:
            }
        }
        throw new IllegalArgumentException("expected a number, got " + v);
    }

    /**
     * The values of the given fields, copied out of a row the reader will reuse, for ordering:
     * Paimon's own value classes are Comparable, byte arrays are compared by the caller.
     */
    static Object[] sortKey(RowType type, List<String> names, InternalRow row) {
        Object[] out = new Object[names.size()];
        for (int k = 0; k < names.size(); k++) {
            int i = type.getFieldIndex(names.get(k));
            Object v = InternalRow.createFieldGetter(type.getTypeAt(i), i).getFieldOrNull(row);
            if (v instanceof BinaryString) v = ((BinaryString) v).copy();
            else if (v instanceof Decimal) v = ((Decimal) v).copy();
            else if (v instanceof byte[]) v = ((byte[]) v).clone();
            out[k] = v;
        }
        return out;
    }

    /** Nulls first, byte arrays by unsigned bytes (as Paimon orders keys), others as they compare. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static int compareKeys(Object[] a, Object[] b) {
        for (int k = 0; k < a.length; k++) {
            Object x = a[k];
            Object y = b[k];
            int c;
            if (x == null || y == null) c = x == null ? (y == null ? 0 : -1) : 1;
            else if (x instanceof byte[]) c = java.util.Arrays.compareUnsigned((byte[]) x, (byte[]) y);
            else c = ((Comparable) x).compareTo(y);
            if (c != 0) return c;
        }
        return 0;
    }

    /** A partition row as field name → rendered value. */
    static ObjectNode partitionToJson(RowType partitionType, InternalRow partition) {
        return rowToJson(partitionType, partition);
    }

    static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        if (array != null) array.forEach(n -> out.add(n.asText()));
        return out;
    }

    static void putAll(ObjectNode node, Map<String, String> map) {
        map.forEach(node::put);
    }
}
