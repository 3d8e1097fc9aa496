package strata.interop;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.InputStream;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.paimon.fs.FileIO;
import org.apache.paimon.fs.Path;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataFilePathFactory;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.shade.org.apache.avro.file.DataFileStream;
import org.apache.paimon.shade.org.apache.avro.generic.GenericDatumReader;
import org.apache.paimon.shade.org.apache.avro.generic.GenericRecord;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.utils.FileStorePathFactory;

/**
 * The formats of a table's live data files as Paimon sees them, for
 * test/interop-file-format.test.ts:
 *
 * <pre>
 *   file-formats &lt;tableDir&gt; [--out F]
 * </pre>
 *
 * One JSON object a line per data file of the latest snapshot, ordered by partition, bucket,
 * level and name: {"file", "bucket", "level", "format", "codec"}. "format" is what Paimon's
 * readers pick the file's reader by, DataFilePathFactory.formatIdentifier of its name (its
 * extension); "codec" is the avro.codec of an Avro file's header, read with the Avro library
 * Paimon bundles, and null for other formats.
 */
final class FileFormatInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private FileFormatInterop() {}

    static void run(String[] args, PrintWriter out) throws Exception {
        if (args.length < 2 || args[1].startsWith("--")) throw new IllegalArgumentException("file-formats: expected a table directory");
        FileIO io = new BufferedLocalFileIO();
        FileStoreTable table = FileStoreTableFactory.create(io, new Path(new File(args[1]).getAbsolutePath()));
        Long latest = table.snapshotManager().latestSnapshotId();
        List<ObjectNode> lines = new ArrayList<>();
        if (latest != null) {
            FileStorePathFactory paths = table.store().pathFactory();
            for (ManifestEntry e : table.store().newScan().withSnapshot(latest).plan().files()) {
                DataFileMeta f = e.file();
                String format = DataFilePathFactory.formatIdentifier(f.fileName());
                ObjectNode n = MAPPER.createObjectNode();
                n.put("file", f.fileName());
                n.put("partition", e.partition().toString());
                n.put("bucket", e.bucket());
                n.put("level", f.level());
                n.put("format", format);
                Path file = paths.createDataFilePathFactory(e.partition(), e.bucket()).toPath(f);
                n.put("codec", format.equals("avro") ? avroCodec(io, file) : null);
                lines.add(n);
            }
        }
        lines.sort(Comparator.comparing((ObjectNode n) -> n.get("partition").asText())
                .thenComparing(n -> n.get("bucket").asInt())
                .thenComparing(n -> n.get("level").asInt())
                .thenComparing(n -> n.get("file").asText()));
        for (ObjectNode n : lines) {
            n.remove("partition");
            out.println(n.toString());
        }
    }

    private static String avroCodec(FileIO io, Path file) throws Exception {
        try (InputStream in = io.newInputStream(file);
                DataFileStream<GenericRecord> avro = new DataFileStream<>(in, new GenericDatumReader<>())) {
            String codec = avro.getMetaString("avro.codec");
            return codec == null ? "null" : codec;
        }
    }
}
