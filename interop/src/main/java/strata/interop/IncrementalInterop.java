package strata.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.RowType;

/**
 * Paimon's incremental batch read, for test/interop-incremental.test.ts:
 *
 * <pre>
 *   incremental &lt;tableDir&gt; --schema &lt;options JSON&gt; [--out F]
 * </pre>
 *
 * The JSON holds the dynamic options of the read, applied with FileStoreTable.copy, e.g.
 * {"incremental-between": "3,7", "incremental-between-scan-mode": "delta"} (the flag is the
 * harness's existing --schema, which takes inline JSON). Every row Paimon's read returns,
 * in its order, as one JSON object a line with the row kind first as "_kind" ("+I", "-U",
 * "+U", "-D"), the way `strata read --from-snapshot --json` prints them.
 */
final class IncrementalInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private IncrementalInterop() {}

    static void run(String[] args, PrintWriter out) throws Exception {
        if (args.length < 2 || args[1].startsWith("--")) throw new IllegalArgumentException("incremental: expected a table directory");
        String options = null;
        for (int i = 2; i + 1 < args.length; i += 2) {
            if (args[i].equals("--schema")) options = args[i + 1].trim().startsWith("{") ? args[i + 1] : Files.readString(Paths.get(args[i + 1]));
        }
        if (options == null) throw new IllegalArgumentException("incremental: expected --schema with the read's options as JSON");
        Map<String, String> dynamic = new HashMap<>();
        JsonNode json = MAPPER.readTree(options);
        for (Iterator<Map.Entry<String, JsonNode>> it = json.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            dynamic.put(e.getKey(), e.getValue().asText());
        }
        FileStoreTable table = FileStoreTableFactory.create(new BufferedLocalFileIO(), new Path(new File(args[1]).getAbsolutePath())).copy(dynamic);
        RowType type = table.rowType();
        ReadBuilder rb = table.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        List<String> lines = new ArrayList<>();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            reader.forEachRemaining(row -> {
                ObjectNode n = MAPPER.createObjectNode();
                n.put("_kind", row.getRowKind().shortString());
                n.setAll(JsonValues.rowToJson(type, row));
                lines.add(n.toString());
            });
        }
        for (String l : lines) out.println(l);
    }
}
