package strata.interop;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.RowType;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code changelog <dir> --from A --to B [--out F]}: Paimon's batch incremental read of the
 * changelog of snapshots (A, B] ({@code incremental-between = A,B} with
 * {@code incremental-between-scan-mode = changelog}), one JSON object a line: the row as
 * {@code read} renders it, with {@code _kind} its row kind ({@code +I}, {@code -U}, {@code +U},
 * {@code -D}). Lines are ordered by primary key; one key's changes keep Paimon's order.
 * Parses its own flags (PaimonInterop dispatches to it before its own parsing).
 */
final class ChangelogCommands {
    private ChangelogCommands() {}

    static boolean handles(String[] args) {
        return args.length > 0 && args[0].equals("changelog");
    }

    static void run(String[] args, boolean inBatch) throws Exception {
        if (args.length < 2 || args[1].startsWith("--")) throw new IllegalArgumentException("changelog: expected a table directory");
        String dir = args[1];
        Long from = null;
        Long to = null;
        String outFile = null;
        for (int i = 2; i < args.length; i++) {
            if (i + 1 >= args.length) throw new IllegalArgumentException(args[i] + " needs a value");
            String v = args[++i];
            switch (args[i - 1]) {
                case "--from":
                    from = Long.parseLong(v);
                    break;
                case "--to":
                    to = Long.parseLong(v);
                    break;
                case "--out":
                    outFile = v;
                    break;
                default:
                    throw new IllegalArgumentException("changelog: unknown flag " + args[i - 1] + " (--from, --to, --out)");
            }
        }
        if (from == null || to == null) throw new IllegalArgumentException("changelog: --from and --to are required");
        if (inBatch && outFile == null) throw new IllegalArgumentException("a batch command needs --out (stdout carries the status lines)");
        FileStoreTable base = FileStoreTableFactory.create(new BufferedLocalFileIO(), new Path(new File(dir).getAbsolutePath()));
        Map<String, String> options = new HashMap<>();
        options.put(CoreOptions.INCREMENTAL_BETWEEN.key(), from + "," + to);
        options.put(CoreOptions.INCREMENTAL_BETWEEN_SCAN_MODE.key(), "changelog");
        FileStoreTable table = base.copy(options);
        RowType type = table.rowType();
        List<String> keys = table.primaryKeys();
        ReadBuilder rb = table.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        List<Object[]> sortKeys = new ArrayList<>();
        List<String> lines = new ArrayList<>();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            reader.forEachRemaining(row -> {
                sortKeys.add(JsonValues.sortKey(type, keys, row));
                ObjectNode json = JsonValues.rowToJson(type, row);
                ObjectNode line = json.objectNode();
                line.put("_kind", row.getRowKind().shortString());
                line.setAll(json);
                lines.add(line.toString());
            });
        }
        Integer[] order = new Integer[lines.size()];
        for (int i = 0; i < order.length; i++) order[i] = i;
        // stable: one key's changes keep the order Paimon read them in
        Arrays.sort(order, (x, y) -> JsonValues.compareKeys(sortKeys.get(x), sortKeys.get(y)));
        try (PrintWriter out = new PrintWriter(new OutputStreamWriter(outFile == null ? new FileOutputStream(java.io.FileDescriptor.out) : new FileOutputStream(outFile), StandardCharsets.UTF_8))) {
            for (int i : order) out.println(lines.get(i));
        }
    }
}
