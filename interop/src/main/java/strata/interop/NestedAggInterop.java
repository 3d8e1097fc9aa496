package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

/**
 * Paimon's aggregation over nested values, for test/interop-nested-agg.test.ts:
 *
 * <pre>
 *   nested-agg &lt;tableDir&gt; [--in F] [--out F]
 * </pre>
 *
 * Writes each line of --in (a JSON array of records, each one commit) into the existing table
 * with Paimon's batch writer, then prints Paimon's batch read (merged, retractions dropped),
 * one JSON object a line in the order the reader returns them. Values in JSON: an ARRAY is a
 * JSON array, a ROW an object of its fields, a MAP or MULTISET an array of [key, value]
 * pairs in the map's entry order, a record's `_kind` its row kind (+I by default), scalars as
 * the harness renders them (JsonValues).
 */
final class NestedAggInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private NestedAggInterop() {}

    static void run(String[] args, PrintWriter out) throws Exception {
        if (args.length < 2 || args[1].startsWith("--")) throw new IllegalArgumentException("nested-agg: expected a table directory");
        String in = null;
        for (int i = 2; i + 1 < args.length; i += 2) {
            if (args[i].equals("--in")) in = args[i + 1];
        }
        FileStoreTable table = FileStoreTableFactory.create(new BufferedLocalFileIO(), new Path(new File(args[1]).getAbsolutePath()));
        RowType type = table.rowType();
        if (in != null) write(table, type, in);
        ReadBuilder rb = table.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        List<String> lines = new ArrayList<>();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            reader.forEachRemaining(row -> lines.add(JsonValues.rowToJson(type, row).toString()));
        }
        for (String l : lines) out.println(l);
    }

    private static void write(FileStoreTable table, RowType type, String in) throws Exception {
        List<List<GenericRow>> commits = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(new FileInputStream(in), StandardCharsets.UTF_8))) {
            String line;
            int n = 0;
            while ((line = r.readLine()) != null) {
                n++;
                if (line.isBlank()) continue;
                JsonNode records = MAPPER.readTree(line);
                if (!records.isArray()) throw new IllegalArgumentException("line " + n + ": expected a JSON array of records");
                List<GenericRow> rows = new ArrayList<>();
                for (JsonNode rec : records) rows.add(rowFromJson(type, rec, "line " + n));
                commits.add(rows);
            }
        }
        for (List<GenericRow> rows : commits) {
            BatchWriteBuilder wb = table.newBatchWriteBuilder();
            try (IOManager io = IOManager.create(System.getProperty("java.io.tmpdir"));
                    BatchTableWrite w = wb.newWrite().withIOManager(io);
                    BatchTableCommit c = wb.newCommit()) {
                for (GenericRow row : rows) w.write(row);
                c.commit(w.prepareCommit());
            }
        }
    }

    private static GenericRow rowFromJson(RowType type, JsonNode rec, String where) {
        if (!rec.isObject()) throw new IllegalArgumentException(where + ": expected a JSON object, got " + rec);
        RowKind kind = rec.has("_kind") ? RowKind.fromShortString(rec.get("_kind").asText()) : RowKind.INSERT;
        List<DataField> fields = type.getFields();
        GenericRow row = new GenericRow(kind, fields.size());
        for (int i = 0; i < fields.size(); i++) {
            row.setField(i, fromJson(fields.get(i).type(), rec.get(fields.get(i).name())));
        }
        return row;
    }

    private static Object fromJson(DataType t, JsonNode v) {
        if (v == null || v.isNull()) return null;
        if (t instanceof ArrayType) {
            DataType e = ((ArrayType) t).getElementType();
            Object[] out = new Object[v.size()];
            for (int i = 0; i < out.length; i++) out[i] = fromJson(e, v.get(i));
            return new GenericArray(out);
        }
        if (t instanceof MapType || t instanceof MultisetType) {
            DataType k = t instanceof MapType ? ((MapType) t).getKeyType() : ((MultisetType) t).getElementType();
            DataType val = t instanceof MapType ? ((MapType) t).getValueType() : new org.apache.paimon.types.IntType(false);
            Map<Object, Object> m = new LinkedHashMap<>();
            for (JsonNode pair : v) m.put(fromJson(k, pair.get(0)), fromJson(val, pair.get(1)));
            return new GenericMap(m);
        }
        if (t instanceof RowType) {
            List<DataField> fields = ((RowType) t).getFields();
            GenericRow row = new GenericRow(fields.size());
            for (int i = 0; i < fields.size(); i++) row.setField(i, fromJson(fields.get(i).type(), v.get(fields.get(i).name())));
            return row;
        }
        return JsonValues.valueFromJson(t, v);
    }
}
