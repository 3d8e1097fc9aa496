package strata.iceberg;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.Schema;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

import java.math.BigDecimal;

/**
 * A read's row filter from JSON: an array of conditions, all of which must hold, each
 * `[column, op, value]` with op one of `=`, `!=`, `<`, `<=`, `>`, `>=`, or `[column,
 * "is_null"]` / `[column, "not_null"]`. A value is JSON in the harness's rendering (BIGINT and
 * DECIMAL as strings, DATE and TIMESTAMP as ISO text) and becomes the literal of the column's
 * Iceberg type, so the planner can compare it with partition values and column bounds.
 */
final class Filters {
    private Filters() {}

    static Expression parse(JsonNode conditions, Schema schema) {
        if (!conditions.isArray()) throw new IllegalArgumentException("--filter: expected a JSON array of conditions, got " + conditions);
        Expression out = Expressions.alwaysTrue();
        for (JsonNode c : conditions) out = Expressions.and(out, condition(c, schema));
        return out;
    }

    private static Expression condition(JsonNode c, Schema schema) {
        String name = c.get(0).asText();
        String op = c.get(1).asText();
        Types.NestedField field = schema.findField(name);
        if (field == null) throw new IllegalArgumentException("--filter: no column '" + name + "'");
        switch (op) {
            case "is_null":
                return Expressions.isNull(name);
            case "not_null":
                return Expressions.notNull(name);
            default:
        }
        Object v = literal(field.type(), c.get(2));
        switch (op) {
            case "=":
                return Expressions.equal(name, v);
            case "!=":
                return Expressions.notEqual(name, v);
            case "<":
                return Expressions.lessThan(name, v);
            case "<=":
                return Expressions.lessThanOrEqual(name, v);
            case ">":
                return Expressions.greaterThan(name, v);
            case ">=":
                return Expressions.greaterThanOrEqual(name, v);
            default:
                throw new IllegalArgumentException("--filter: unknown op '" + op + "'");
        }
    }

    /** The value as the Java type Iceberg's literal of this column type is made from. */
    private static Object literal(Type type, JsonNode v) {
        switch (type.typeId()) {
            case BOOLEAN:
                return v.booleanValue();
            case INTEGER:
                return v.asInt();
            case LONG:
                return Long.parseLong(v.asText());
            case FLOAT:
                return (float) v.asDouble();
            case DOUBLE:
                return v.asDouble();
            case DECIMAL:
                return new BigDecimal(v.asText()).setScale(((Types.DecimalType) type).scale());
            default:
                // strings; dates and timestamps as ISO text, which Iceberg's string literal converts
                return v.asText();
        }
    }
}
