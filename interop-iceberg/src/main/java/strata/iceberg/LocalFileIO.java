package strata.iceberg;

import org.apache.iceberg.Files;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;

import java.io.File;

/**
 * Iceberg's FileIO on the local file system without Hadoop: locations are plain paths or
 * `file:` URIs (`file:/a/b`, `file:///a/b`), as Paimon and Strata write them. Iceberg's own
 * local files (`Files.localInput`) do the reading. The harness only reads, so deleting is
 * refused rather than done.
 */
final class LocalFileIO implements FileIO {
    @Override
    public InputFile newInputFile(String location) {
        return Files.localInput(local(location));
    }

    @Override
    public OutputFile newOutputFile(String location) {
        return Files.localOutput(local(location));
    }

    @Override
    public void deleteFile(String location) {
        throw new UnsupportedOperationException("the Iceberg harness only reads; it does not delete " + location);
    }

    /** The local file a location names; other schemes (s3://, hdfs://) are refused by name. */
    static File local(String location) {
        String path = location;
        if (path.startsWith("file://")) path = path.substring("file://".length());
        else if (path.startsWith("file:")) path = path.substring("file:".length());
        else if (path.matches("^[a-zA-Z][a-zA-Z0-9+.-]*://.*")) {
            throw new IllegalArgumentException("the Iceberg harness reads local files only, not " + location);
        }
        return new File(path);
    }
}
