package strata.interop;

import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.SeekableInputStream;
import org.apache.paimon.fs.VectoredReadable;
import org.apache.paimon.fs.local.LocalFileIO;

import java.io.IOException;

/**
 * Paimon's LocalFileIO with input streams that buffer small reads. Paimon's own local stream
 * passes every read to the file, and Avro reads a manifest's header (its schema as
 * JSON) a byte at a time, so a read of a small table cost tens of thousands of read system
 * calls. Reads shorter than the buffer go through it; seek, getPos and pread keep the
 * positions Paimon expects, so what Paimon reads is unchanged.
 */
final class BufferedLocalFileIO extends LocalFileIO {
    private static final long serialVersionUID = 1L;

    @Override
    public SeekableInputStream newInputStream(Path path) throws IOException {
        return new Buffered((LocalSeekableInputStream) super.newInputStream(path));
    }

    private static final class Buffered extends SeekableInputStream implements VectoredReadable {
        private final LocalSeekableInputStream in;
        private final byte[] buffer = new byte[8192];
        /** unread buffered bytes are buffer[next, end); the file is positioned at pos + (end - next) */
        private int next;
        private int end;
        private long pos;

        Buffered(LocalSeekableInputStream in) throws IOException {
            this.in = in;
            this.pos = in.getPos();
        }

        /** Refills the empty buffer; false at the end of the file. */
        private boolean fill() throws IOException {
            int n = in.read(buffer, 0, buffer.length);
            if (n <= 0) return false;
            next = 0;
            end = n;
            return true;
        }

        @Override
        public int read() throws IOException {
            if (next == end && !fill()) return -1;
            pos++;
            return buffer[next++] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) return 0;
            int n;
            if (next == end && len >= buffer.length) {
                // a large read goes to the file directly
                n = in.read(b, off, len);
                if (n <= 0) return n;
            } else {
                if (next == end && !fill()) return -1;
                n = Math.min(len, end - next);
                System.arraycopy(buffer, next, b, off, n);
                next += n;
            }
            pos += n;
            return n;
        }

        @Override
        public void seek(long desired) throws IOException {
            if (desired == pos) return;
            next = end = 0;
            in.seek(desired);
            pos = desired;
        }

        @Override
        public long getPos() {
            return pos;
        }

        @Override
        public int pread(long position, byte[] b, int off, int len) throws IOException {
            return in.pread(position, b, off, len);
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
