package statebench.flink;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The worker's wire format (big-endian), documented in backends/flink/__init__.py.
 *
 * <p>Tagged values: 0 null, 1 long (i64), 2 string (u32 length + UTF-8), 3 double (f64), 4 boolean
 * (u8), 5 list (u32 n + n values), 6 map (u32 n + n key/value pairs).
 */
final class Wire {
    static final int NULL = 0;
    static final int LONG = 1;
    static final int STRING = 2;
    static final int DOUBLE = 3;
    static final int BOOL = 4;
    static final int LIST = 5;
    static final int MAP = 6;

    private Wire() {}

    /** Reads commands out of one request frame. */
    static final class In {
        final ByteBuffer buf;

        In(byte[] frame) {
            this.buf = ByteBuffer.wrap(frame);
        }

        boolean hasMore() {
            return buf.hasRemaining();
        }

        int u8() {
            return buf.get() & 0xFF;
        }

        int u16() {
            return buf.getShort() & 0xFFFF;
        }

        int i32() {
            return buf.getInt();
        }

        long i64() {
            return buf.getLong();
        }

        String str() {
            int n = buf.getInt();
            if (n < 0 || n > buf.remaining()) {
                throw new BufferUnderflowException();
            }
            String s = new String(buf.array(), buf.arrayOffset() + buf.position(), n,
                    StandardCharsets.UTF_8);
            buf.position(buf.position() + n);
            return s;
        }

        Object value() {
            int tag = u8();
            switch (tag) {
                case NULL:
                    return null;
                case LONG:
                    return buf.getLong();
                case STRING:
                    return str();
                case DOUBLE:
                    return buf.getDouble();
                case BOOL:
                    return buf.get() != 0;
                case LIST: {
                    int n = buf.getInt();
                    List<Object> out = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        out.add(value());
                    }
                    return out;
                }
                case MAP: {
                    int n = buf.getInt();
                    Map<Object, Object> out = new LinkedHashMap<>();
                    for (int i = 0; i < n; i++) {
                        Object k = value();
                        out.put(k, value());
                    }
                    return out;
                }
                default:
                    throw new IllegalArgumentException("unknown value tag " + tag);
            }
        }
    }

    /**
     * Collects the values of one reply frame: an unsynchronized growable byte array
     * (ByteArrayOutputStream's synchronized write(int) per byte cost ~100 ns per result).
     */
    static final class Out {
        byte[] buf = new byte[1 << 12];
        int size;
        int count;

        private void room(int n) {
            if (size + n > buf.length) {
                buf = java.util.Arrays.copyOf(buf, Math.max(buf.length * 2, size + n));
            }
        }

        int size() {
            return size;
        }

        void write(byte[] b, int off, int len) {
            room(len);
            System.arraycopy(b, off, buf, size, len);
            size += len;
        }

        void u8(int v) {
            room(1);
            buf[size++] = (byte) v;
        }

        void i32(int v) {
            room(4);
            buf[size] = (byte) (v >>> 24);
            buf[size + 1] = (byte) (v >>> 16);
            buf[size + 2] = (byte) (v >>> 8);
            buf[size + 3] = (byte) v;
            size += 4;
        }

        void i64(long v) {
            room(8);
            for (int i = 0; i < 8; i++) {
                buf[size + i] = (byte) (v >>> (56 - 8 * i));
            }
            size += 8;
        }

        void str(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            i32(b.length);
            write(b, 0, b.length);
        }

        /** One top-level result: counted in the reply header. */
        void result(Object v) {
            count++;
            value(v);
        }

        @SuppressWarnings("unchecked")
        void value(Object v) {
            if (v == null) {
                u8(NULL);
            } else if (v instanceof Long || v instanceof Integer) {
                u8(LONG);
                i64(((Number) v).longValue());
            } else if (v instanceof String) {
                u8(STRING);
                str((String) v);
            } else if (v instanceof Double || v instanceof Float) {
                u8(DOUBLE);
                i64(Double.doubleToRawLongBits(((Number) v).doubleValue()));
            } else if (v instanceof Boolean) {
                u8(BOOL);
                u8(((Boolean) v) ? 1 : 0);
            } else if (v instanceof Map) {
                Map<Object, Object> m = (Map<Object, Object>) v;
                u8(MAP);
                i32(m.size());
                for (Map.Entry<Object, Object> e : m.entrySet()) {
                    value(e.getKey());
                    value(e.getValue());
                }
            } else if (v instanceof Iterable) {
                List<Object> items = new ArrayList<>();
                for (Object o : (Iterable<Object>) v) {
                    items.add(o);
                }
                u8(LIST);
                i32(items.size());
                for (Object o : items) {
                    value(o);
                }
            } else {
                throw new IllegalArgumentException("cannot encode " + v.getClass().getName());
            }
        }

        byte[] buffer() {
            return buf;
        }
    }
}
