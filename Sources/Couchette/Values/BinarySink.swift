/// Writes parser events straight into the binary format (see ``ValueTag``), in one pass.
///
/// Values are written where they are read, and only their positions are remembered (one flat
/// stack for every open container). When an object or array closes, its header is put in front
/// of its contents in one move; an object's entries are sorted only when its keys did not arrive
/// in order (JSON written with sorted keys, like CouchDB's and the benchmark's, never is).
struct BinarySink: JSONSink {
    private(set) var encoder: ValueEncoder

    private struct Frame {
        /// Where the container's contents (and later its header) start.
        let start: Int
        /// Index in ``slots`` of the container's first slot target.
        let firstSlot: Int
        let isObject: Bool
        /// Keys so far strictly increasing by their UTF-8 bytes (no repeats).
        var inOrder = true
    }

    private var frames: [Frame] = []
    /// Slot targets of every open container, innermost last (see
    /// ``ValueEncoder/closeWrittenContainer(start:slots:dictionary:)``).
    private var slots: [Int] = []

    /// A sink whose output buffer starts with room for `capacity` bytes.
    init(capacity: Int = 0) {
        encoder = ValueEncoder(capacity: capacity)
        frames.reserveCapacity(8)
        slots.reserveCapacity(64)
    }

    /// Forgets a value whose transcoding failed halfway: its bytes from `start` on, and the
    /// containers it left open. The sink then continues after the values before it, so one sink
    /// can write many documents one after another (see ``JSONDocumentBatch``).
    mutating func discard(from start: Int) {
        encoder.truncate(to: start)
        frames.removeAll(keepingCapacity: true)
        slots.removeAll(keepingCapacity: true)
    }

    /// Appends a value already in the binary format, as a value of its own (not inside an open
    /// container).
    mutating func appendEncoded(_ bytes: [UInt8]) {
        encoder.append(EncodedValue(bytes: bytes))
    }

    /// Notes where a value starts, when it is an array element (object values are noted with
    /// their keys).
    private mutating func valueStarts() {
        if let top = frames.last, !top.isObject { slots.append(encoder.bytes.count) }
    }

    mutating func null() { valueStarts(); encoder.write(null: ()) }
    mutating func bool(_ value: Bool) { valueStarts(); encoder.write(bool: value) }
    mutating func integer(_ value: Int64) { valueStarts(); encoder.writeInteger(value) }
    mutating func double(_ value: Double) { valueStarts(); encoder.writeFiniteDouble(value) }
    mutating func largeInteger(_ value: LargeInteger) { valueStarts(); encoder.writeLargeInteger(value) }
    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>) { valueStarts(); encoder.appendStringBytes(utf8) }

    mutating func beginObject() {
        valueStarts()
        frames.append(Frame(start: encoder.bytes.count, firstSlot: slots.count, isObject: true))
    }

    mutating func key(_ utf8: UnsafeBufferPointer<UInt8>) {
        guard let top = frames.indices.last else { return }
        if frames[top].inOrder, slots.count > frames[top].firstSlot {
            let follows = encoder.withKey(at: slots[slots.count - 2]) { previous in Self.precedes(previous, utf8) }
            if !follows { frames[top].inOrder = false }
        }
        slots.append(encoder.bytes.count)
        encoder.appendKey(utf8)
        slots.append(encoder.bytes.count)
    }

    mutating func endObject() {
        guard let frame = frames.popLast() else { return }
        let targets = slots[frame.firstSlot...]
        if frame.inOrder {
            encoder.closeWrittenContainer(start: frame.start, slots: targets, dictionary: true)
        } else {
            encoder.closeUnsortedDictionary(start: frame.start, slots: targets)
        }
        slots.removeSubrange(frame.firstSlot...)
    }

    mutating func beginArray() {
        valueStarts()
        frames.append(Frame(start: encoder.bytes.count, firstSlot: slots.count, isObject: false))
    }

    mutating func endArray() {
        guard let frame = frames.popLast() else { return }
        encoder.closeWrittenContainer(start: frame.start, slots: slots[frame.firstSlot...], dictionary: false)
        slots.removeSubrange(frame.firstSlot...)
    }

    /// Whether `a` sorts strictly before `b` by bytes.
    private static func precedes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let common = min(a.count, b.count)
        var index = 0
        while index < common {
            if a[index] != b[index] { return a[index] < b[index] }
            index += 1
        }
        return a.count < b.count
    }
}
