package strata.interop;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.paimon.CoreOptions;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.options.Options;
import org.apache.paimon.postpone.BucketFiles;
import org.apache.paimon.postpone.PostponeBucketFileStoreWrite;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;

/**
 * Paimon's postpone compaction without Flink, for test/interop-postpone-bucket.test.ts:
 *
 * <pre>
 *   postpone-compact &lt;tableDir&gt; [--out F]
 * </pre>
 *
 * The steps of Paimon 1.4.2's CompactAction for a postpone-bucket table (buildForPostponeBucketCompaction)
 * with core classes in one process: per partition with postponed files, the bucket count its
 * real buckets record, else postpone.default-bucket-num; its postponed files one by one in
 * creation-time order, each read as PostponeBucketCompactSplitSource hands it out (a one-file
 * split of bucket -2, read without merging) and parsed for its write id as its channel computer
 * does; every row written through a fixed-bucket writer of that count; the writers' new files
 * moved into compact results (BucketFiles, as PostponeBucketCommittableRewriter) and the
 * postponed files removed (as RemovePostponeBucketFilesOperator), all in one commit. Prints
 * {"snapshot": id, "files": postponed files compacted, "writeIds": [...]}.
 */
final class PostponeInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private PostponeInterop() {}

    static void run(String[] args, PrintWriter out) throws Exception {
        if (args.length < 2 || args[1].startsWith("--")) throw new IllegalArgumentException("postpone-compact: expected a table directory");
        FileStoreTable table = FileStoreTableFactory.create(new BufferedLocalFileIO(), new Path(new File(args[1]).getAbsolutePath()));
        if (table.coreOptions().bucket() != BucketMode.POSTPONE_BUCKET) throw new IllegalArgumentException("postpone-compact: the table's bucket is " + table.coreOptions().bucket() + ", expected -2");
        int defaultBucketNum = new Options(table.options()).get(CoreOptions.POSTPONE_DEFAULT_BUCKET_NUM);
        FileStoreTable scanTable = withBuckets(table, defaultBucketNum);
        List<BinaryRow> partitions = scanTable.newSnapshotReader().withBucket(BucketMode.POSTPONE_BUCKET).partitions();
        List<CommitMessage> messages = new ArrayList<>();
        List<Integer> writeIds = new ArrayList<>();
        int compacted = 0;
        try (IOManager io = IOManager.create(System.getProperty("java.io.tmpdir"))) {
            for (BinaryRow partition : partitions) {
                int bucketNum = defaultBucketNum;
                Iterator<ManifestEntry> it = table.newSnapshotReader().withPartitionFilter(Collections.singletonList(partition)).onlyReadRealBuckets().readFileIterator();
                if (it.hasNext()) bucketNum = it.next().totalBuckets();
                FileStoreTable realTable = withBuckets(table, bucketNum);
                List<Split> splits = realTable.newSnapshotReader().withPartitionFilter(Collections.singletonList(partition)).withBucket(BucketMode.POSTPONE_BUCKET).read().splits();
                BatchWriteBuilder wb = realTable.newBatchWriteBuilder();
                try (BatchTableWrite w = wb.newWrite().withIOManager(io)) {
                    for (Split split : splits) {
                        DataSplit ds = (DataSplit) split;
                        List<DataFileMeta> files = new ArrayList<>(ds.dataFiles());
                        files.sort(Comparator.comparing(DataFileMeta::creationTime));
                        for (DataFileMeta meta : files) {
                            writeIds.add(PostponeBucketFileStoreWrite.getWriteId(meta.fileName()));
                            DataSplit one = DataSplit.builder()
                                    .withPartition(ds.partition())
                                    .withBucket(ds.bucket())
                                    .withBucketPath(ds.bucketPath())
                                    .withTotalBuckets(ds.totalBuckets())
                                    .withDataFiles(Collections.singletonList(meta))
                                    .isStreaming(false)
                                    .build();
                            try (RecordReader<InternalRow> reader = realTable.newRead().createReader(one)) {
                                reader.forEachRemaining(row -> {
                                    try {
                                        w.write(row);
                                    } catch (Exception e) {
                                        throw new RuntimeException(e);
                                    }
                                });
                            }
                            compacted++;
                        }
                        messages.add(new CommitMessageImpl(ds.partition(), ds.bucket(), ds.totalBuckets(), DataIncrement.emptyIncrement(), new CompactIncrement(ds.dataFiles(), Collections.emptyList(), Collections.emptyList())));
                    }
                    Map<Integer, BucketFiles> buckets = new LinkedHashMap<>();
                    for (CommitMessage m : w.prepareCommit()) {
                        CommitMessageImpl msg = (CommitMessageImpl) m;
                        buckets.computeIfAbsent(msg.bucket(), b -> new BucketFiles(realTable.store().pathFactory().createDataFilePathFactory(partition, b), realTable.fileIO())).update(msg);
                    }
                    for (Map.Entry<Integer, BucketFiles> e : buckets.entrySet()) messages.add(e.getValue().makeMessage(partition, e.getKey()));
                }
            }
        }
        if (!messages.isEmpty()) {
            try (BatchTableCommit c = scanTable.newBatchWriteBuilder().newCommit()) {
                c.commit(messages);
            }
        }
        ObjectNode n = MAPPER.createObjectNode();
        n.put("snapshot", table.snapshotManager().latestSnapshotId());
        n.put("files", compacted);
        writeIds.forEach(n.putArray("writeIds")::add);
        out.println(MAPPER.writeValueAsString(n));
    }

    private static FileStoreTable withBuckets(FileStoreTable table, int buckets) {
        Map<String, String> options = new HashMap<>(table.options());
        options.put(CoreOptions.BUCKET.key(), String.valueOf(buckets));
        return table.copy(table.schema().copy(options));
    }
}
