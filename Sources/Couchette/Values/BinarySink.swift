/// Writes parser events straight into the binary format (see ``ValueTag``).
///
/// Values are written where they are read; when an object or array closes, its entries are put
/// in canonical order behind a header in one move, so no intermediate ``Value`` is built.
struct BinarySink: JSONSink {
    private(set) var encoder = ValueEncoder()

    private enum Frame {
        case object(start: Int, entries: [ValueEncoder.PendingEntry])
        case array(start: Int, elements: [Int])
    }

    private var stack: [Frame] = []

    /// Notes where a value starts, for the array it belongs to.
    private mutating func valueStarts() {
        guard case .array(let start, var elements)? = stack.last else { return }
        stack.removeLast()  // take the frame out so that appending does not copy its array
        elements.append(encoder.bytes.count)
        stack.append(.array(start: start, elements: elements))
    }

    mutating func null() { valueStarts(); encoder.write(null: ()) }
    mutating func bool(_ value: Bool) { valueStarts(); encoder.write(bool: value) }
    mutating func integer(_ value: Int64) { valueStarts(); encoder.writeInteger(value) }
    mutating func double(_ value: Double) { valueStarts(); encoder.writeFiniteDouble(value) }
    mutating func largeInteger(_ value: LargeInteger) { valueStarts(); encoder.writeLargeInteger(value) }
    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>) { valueStarts(); encoder.appendStringBytes(utf8) }

    mutating func beginObject() {
        valueStarts()
        stack.append(.object(start: encoder.bytes.count, entries: []))
    }

    mutating func key(_ utf8: UnsafeBufferPointer<UInt8>) {
        guard case .object(let start, var entries)? = stack.popLast() else { return }
        if !entries.isEmpty { entries[entries.count - 1].end = encoder.bytes.count }
        entries.append(encoder.appendKey(utf8))
        stack.append(.object(start: start, entries: entries))
    }

    mutating func endObject() {
        guard case .object(let start, var entries)? = stack.popLast() else { return }
        if !entries.isEmpty { entries[entries.count - 1].end = encoder.bytes.count }
        encoder.closeDictionary(contentStart: start, entries: entries)
    }

    mutating func beginArray() {
        valueStarts()
        stack.append(.array(start: encoder.bytes.count, elements: []))
    }

    mutating func endArray() {
        guard case .array(let start, let elements)? = stack.popLast() else { return }
        encoder.closeArray(contentStart: start, starts: elements)
    }
}
