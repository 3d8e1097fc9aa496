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
import org.apache.paimon.table.source.EndOfScanException;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.RowType;

/**
 * Paimon's streaming read, for test/interop-streaming.test.ts:
 *
 * <pre>
 *   streaming &lt;tableDir&gt; --schema &lt;options JSON&gt; [--out F]
 * </pre>
 *
 * The JSON holds the read's dynamic options (FileStoreTable.copy), e.g. {"scan.mode":
 * "from-snapshot-full", "scan.snapshot-id": "3"}. A StreamTableScan is started with them and
 * planned until it has caught up with the table's snapshots (a plan after the first with no
 * splits, or the end of the scan). Every row each plan's splits read, one JSON object a line:
 * "_plan" (the plan's index, 0 the start), "_kind" ("+I", "-U", "+U", "-D"), then the columns;
 * last a line {"_next": N}, the scan's checkpoint (the next snapshot it would read).
 */
final class StreamingInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    /** more plans than any test table has snapshots: a scan that never catches up fails */
    private static final int MAX_PLANS = 10_000;

    private StreamingInterop() {}

    static void run(String[] args, PrintWriter out) throws Exception {
        if (args.length < 2 || args[1].startsWith("--")) throw new IllegalArgumentException("streaming: expected a table directory");
        String options = null;
        for (int i = 2; i + 1 < args.length; i += 2) {
            if (args[i].equals("--schema")) options = args[i + 1].trim().startsWith("{") ? args[i + 1] : Files.readString(Paths.get(args[i + 1]));
        }
        if (options == null) throw new IllegalArgumentException("streaming: expected --schema with the read's options as JSON");
        Map<String, String> dynamic = new HashMap<>();
        JsonNode json = MAPPER.readTree(options);
        for (Iterator<Map.Entry<String, JsonNode>> it = json.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            dynamic.put(e.getKey(), e.getValue().asText());
        }
        FileStoreTable table = FileStoreTableFactory.create(new BufferedLocalFileIO(), new Path(new File(args[1]).getAbsolutePath())).copy(dynamic);
        RowType type = table.rowType();
        ReadBuilder rb = table.newReadBuilder();
        StreamTableScan scan = rb.newStreamScan();
        TableRead read = rb.newRead();
        List<String> lines = new ArrayList<>();
        for (int i = 0; ; i++) {
            if (i == MAX_PLANS) throw new IllegalStateException("streaming: the scan did not catch up within " + MAX_PLANS + " plans");
            TableScan.Plan plan;
            try {
                plan = scan.plan();
            } catch (EndOfScanException e) {
                break;
            }
            List<Split> splits = plan.splits();
            // the start may be empty (a mode without a full state); after it, empty means caught up
            if (splits.isEmpty() && i > 0) break;
            final int index = i;
            try (RecordReader<InternalRow> reader = read.createReader(splits)) {
                reader.forEachRemaining(row -> {
                    ObjectNode n = MAPPER.createObjectNode();
                    n.put("_plan", index);
                    n.put("_kind", row.getRowKind().shortString());
                    n.setAll(JsonValues.rowToJson(type, row));
                    lines.add(n.toString());
                });
            }
        }
        for (String l : lines) out.println(l);
        ObjectNode next = MAPPER.createObjectNode();
        Long checkpoint = scan.checkpoint();
        if (checkpoint == null) next.putNull("_next");
        else next.put("_next", checkpoint);
        out.println(next.toString());
    }
}
