import Foundation

/// The document body a ``StreamingModelEncoder`` writes as the model's values arrive: each entry
/// goes straight into the binary format, and a container gets its header (and its entries their
/// stored key order) when it is done.
///
/// `Encodable` does not say when a container is done: a model may keep a nested container and
/// write to it after writing to its parent again. Models almost never do, so containers are
/// treated as a stack: writing to a container closes every container opened inside it since.
/// Writing to a container that was closed that way cannot be streamed any more — nor can any
/// other misuse the buffered encoder reports in its own words (mixed container kinds, two values
/// in one single-value container, NaN), or a model that is not a dictionary. Then the stream is
/// *spoiled*: everything after is ignored, and ``DocumentEncoder`` encodes the model again with
/// the buffered ``ModelEncoder``, which keeps every container until the end. The two write
/// the same bytes for any model that streams (`StreamingEncoderTests` compares them).
final class BodyStream {
    /// Where a container handle or encoder sits: its level in the stack of open containers, and
    /// the serial number of the container opened there (a later container at the same level has
    /// another, so a handle to a closed container never passes for an open one).
    struct Position {
        let level: Int
        let serial: Int

        /// The position of handles made after the stream was spoiled: never open.
        static let dead = Position(level: 0, serial: -1)
    }

    /// The kinds of value a position can hold.
    enum Kind: Sendable {
        case dictionary, array
        /// An encoder whose value is not written yet (a super-encoder, or the encoder of a nested
        /// value before it asked for a container): an empty dictionary if it never is.
        case encoder
    }

    private struct OpenContainer: Sendable {
        let serial: Int
        var kind: Kind
        /// Where its contents (for an encoder: its value) start in the body.
        let start: Int
        /// Its first entry in ``slots``.
        let firstSlot: Int
    }

    let context: EncodingContext
    // Unchecked exclusivity on the storages below: a stream belongs to the one encoding that made
    // it, on one thread, and no access outlives the method making it (nothing is passed `inout`
    // across a call out of this file), so accesses cannot overlap; the runtime checks cost more
    // than the appends they guard.
    /// The body written so far.
    @exclusivity(unchecked) private(set) var body = ValueEncoder(capacity: 256, slots: 0)  // the stream keeps its own slots
    /// Slot targets of the open containers, innermost last (as ``ValueEncoder`` takes them: for an
    /// array each element's start, for a dictionary each key's start then its value's).
    @exclusivity(unchecked) private var slots: [Int] = []
    @exclusivity(unchecked) private var open: [OpenContainer] = []
    @exclusivity(unchecked) private var nextSerial = 0
    /// The level of the value whose `encode(to:)` runs now: a write to a container below it (one
    /// the model kept from an outer level) would land before the value's own entry is complete, an
    /// order the buffered encoder does not share.
    @exclusivity(unchecked) private var floor = 0
    /// Whether the model must be encoded again by the buffered encoder.
    @exclusivity(unchecked) private(set) var spoiled = false
    /// Whether it was spoiled by something other than an error thrown through the model's
    /// `encode(to:)`: then even an error is worth the buffered encoder's second opinion.
    @exclusivity(unchecked) private(set) var misused = false

    init(context: EncodingContext) {
        self.context = context
        if let spare = Self.spareStacks.withLock({ spare in
            defer { spare = nil }
            return spare
        }) {
            (slots, open) = (spare.slots, spare.open)
        } else {
            slots.reserveCapacity(32)
            open.reserveCapacity(8)
        }
    }

    deinit {
        // Kept for the next encoding unless a model with thousands of entries grew them.
        guard slots.capacity <= 4096, open.capacity <= 64 else { return }
        slots.removeAll(keepingCapacity: true)
        open.removeAll(keepingCapacity: true)
        let stacks = Stacks(slots: slots, open: open)
        Self.spareStacks.withLock { $0 = stacks }
    }

    /// The stacks of a finished encoding, kept for the next one (on any thread): a batch of models
    /// would otherwise allocate and free both for every model.
    private static let spareStacks = Locked<Stacks?>(nil)

    private struct Stacks: Sendable {
        var slots: [Int]
        var open: [OpenContainer]
    }

    // MARK: - The stack of open containers

    /// Opens a container (or an encoder's pending value) where the body ends now.
    func push(_ kind: Kind) -> Position {
        guard !spoiled else { return .dead }
        guard open.count < ValueEncoder.maximumDepth else {
            misuse()  // the buffered encoder names the depth
            return .dead
        }
        let position = Position(level: open.count, serial: nextSerial)
        nextSerial += 1
        open.append(OpenContainer(serial: position.serial, kind: kind, start: body.bytes.count, firstSlot: slots.count))
        return position
    }

    func isOpen(_ position: Position) -> Bool {
        position.level < open.count && open[position.level].serial == position.serial
    }

    /// Makes the container at `position` the innermost one, closing those opened inside it, before
    /// something is written to it; false (and the stream spoiled) when it was closed already.
    func enter(_ position: Position) -> Bool {
        guard !spoiled else { return false }
        guard position.level >= floor, isOpen(position) else {
            misuse()
            return false
        }
        while open.count > position.level + 1 { closeInnermost() }
        return true
    }

    /// Starts the entry `key` of the dictionary at `position`: its value is written next.
    func beginEntry(_ position: Position, key: String) -> Bool {
        guard enter(position) else { return false }
        slots.append(body.bytes.count)
        var key = key
        key.withUTF8 { body.appendKey($0) }
        slots.append(body.bytes.count)
        return true
    }

    /// Starts the next element of the array at `position`.
    func beginElement(_ position: Position) -> Bool {
        guard enter(position) else { return false }
        slots.append(body.bytes.count)
        return true
    }

    /// The number of elements written to the array at `position` (spoiling the stream when the
    /// array was closed: only the buffered encoder still knows).
    func count(_ position: Position) -> Int {
        guard !spoiled else { return 0 }
        guard isOpen(position) else {
            misuse()
            return 0
        }
        return (slots.count - open[position.level].firstSlot)
    }

    /// Turns the pending value of the encoder at `position` into a container of `kind`.
    func becomeContainer(_ position: Position, _ kind: Kind) -> Bool {
        guard !spoiled else { return false }
        guard isOpen(position), position.level == open.count - 1, open[position.level].kind == .encoder else {
            misuse()
            return false
        }
        open[position.level].kind = kind
        return true
    }

    /// Takes the pending value of the encoder at `position` for a single value written next.
    func takeValue(_ position: Position) -> Bool {
        guard !spoiled else { return false }
        guard isOpen(position), position.level == open.count - 1, open[position.level].kind == .encoder else {
            misuse()
            return false
        }
        open.removeLast()
        return true
    }

    /// Closes what is still open from `position` on, after the encoder there returned from
    /// `encode(to:)`. A value closed earlier had a write to an outer container come in while it
    /// was being encoded: the buffered encoder orders such entries differently, so it decides.
    func finish(_ position: Position) {
        guard !spoiled else { return }
        guard isOpen(position) else { return misuse() }
        while open.count > position.level { closeInnermost() }
    }

    /// The finished body, once the root encoder's `encode(to:)` returned; nil when it must be
    /// encoded again by the buffered encoder.
    func finishedBody(root: Position) -> [UInt8]? {
        finish(root)
        guard !spoiled, open.isEmpty else { return nil }
        return body.bytes
    }

    /// Marks the stream as unusable for a reason the buffered encoder reports or handles.
    func misuse() {
        spoiled = true
        misused = true
    }

    /// Marks the stream as unusable after an error was thrown in the middle of an entry (a model
    /// that catches it and goes on would otherwise leave half an entry behind).
    func abandon() {
        spoiled = true
    }

    // MARK: - Values

    /// Writes `value` (already started with ``beginEntry(_:key:)``, ``beginElement(_:)`` or
    /// ``takeValue(_:)``): a leaf at once, anything else through a nested encoder.
    func encode<T: Encodable>(_ value: T, at path: [any CodingKey], key: (any CodingKey)?) throws {
        do {
            if try writeLeaf(value, at: path, key: key) { return }
            try EncodingContext.checkNesting(T.self, at: path, key: key)
            let position = push(.encoder)
            guard !spoiled else { return }
            let child = StreamingModelEncoder(
                stream: self, position: position, codingPath: key.map { path + [$0] } ?? path, isDocumentRoot: false)
            let outer = floor
            floor = position.level
            defer { floor = outer }
            try value.encode(to: child)
            if case .single = child.state { return }  // written whole already
            finish(position)
        } catch {
            abandon()
            throw error
        }
    }

    /// Writes the common leaves without a ``Value`` in between; false for a type that needs an
    /// encoder of its own.
    private func writeLeaf<T: Encodable>(_ value: T, at path: [any CodingKey], key: (any CodingKey)?) throws -> Bool {
        if T.self == String.self {
            body.writeString(same(value, as: String.self))
        } else if T.self == Int.self {
            body.writeInteger(Int64(same(value, as: Int.self)))
        } else if T.self == Double.self {
            write(same(value, as: Double.self))
        } else if T.self == Bool.self {
            body.write(bool: same(value, as: Bool.self))
        } else if T.self == Date.self {
            try write(same(value, as: Date.self), at: path, key: key)
        } else if T.self == [String].self {
            let strings = same(value, as: [String].self)
            let (start, firstSlot) = (body.bytes.count, slots.count)
            for string in strings {
                slots.append(body.bytes.count)
                body.writeString(string)
            }
            closeArray(start: start, firstSlot: firstSlot)
        } else if let leaf = try context.leaf(value, at: path, key: key) {
            write(leaf)
        } else {
            return false
        }
        return true
    }

    func write(_ number: Double) {
        if number.isFinite { body.writeFiniteDouble(number) } else { misuse() }  // the buffered encoder names the path
    }

    /// A date's ISO-8601 text, formatted straight into the body.
    private func write(_ date: Date, at path: [any CodingKey], key: (any CodingKey)?) throws {
        let written =
            ISO8601.canFormat(date)
            && withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ISO8601.formattedCount) { text in
                guard ISO8601.write(date, into: text) else { return false }
                body.appendStringBytes(UnsafeBufferPointer(text))
                return true
            }
        if !written { body.writeString(try EncodingContext.storedText(of: date, at: path, key: key)) }
    }

    func write(_ value: Value) {
        do { try body.write(value) } catch { misuse() }
    }

    func writeNull() { body.write(null: ()) }
    func write(_ flag: Bool) { body.write(bool: flag) }
    func write(_ text: String) { body.writeString(text) }
    func write(_ number: Int64) { body.writeInteger(number) }

    // MARK: - Closing containers

    private func closeInnermost() {
        let container = open.removeLast()
        switch container.kind {
        case .encoder:
            // Never used: an empty dictionary, as the buffered encoder writes for it.
            body.closeWrittenContainer(start: body.bytes.count, slots: slots[slots.count...], dictionary: true)
        case .array:
            closeArray(start: container.start, firstSlot: container.firstSlot)
        case .dictionary:
            closeDictionary(start: container.start, firstSlot: container.firstSlot)
        }
    }

    private func closeArray(start: Int, firstSlot: Int) {
        body.closeWrittenContainer(start: start, slots: slots[firstSlot...], dictionary: false)
        slots.removeSubrange(firstSlot...)
    }

    /// Closes a dictionary whose entries lie in arrival order: as they are when their keys arrived
    /// sorted, else moved into stored order first.
    private func closeDictionary(start: Int, firstSlot: Int) {
        defer { slots.removeSubrange(firstSlot...) }
        let count = (slots.count - firstSlot) / 2
        let inOrder = body.bytes.withUnsafeBufferPointer { bytes in
            (0..<max(count - 1, 0)).allSatisfy { index in
                Self.compareKeys(bytes, slots[firstSlot + 2 * index], slots[firstSlot + 2 * index + 2]) < 0
            }
        }
        if !inOrder { sortEntries(start: start, firstSlot: firstSlot, count: count) }
        body.closeWrittenContainer(start: start, slots: slots[firstSlot...], dictionary: true)
    }

    /// Moves the `count` entries written since `start` into the order of their keys' bytes and
    /// updates their slots. Of a repeated key only the last value is kept (as the buffered
    /// encoder and JSON readers do); the slots of the entries dropped are removed.
    private func sortEntries(start: Int, firstSlot: Int, count: Int) {
        // Scratch space on the stack (for the handful of entries of a model): the entry order,
        // then each entry's slots as they were.
        let kept = withUnsafeTemporaryAllocation(of: Int.self, capacity: 3 * count) { scratch in
            var order = UnsafeMutableBufferPointer(rebasing: scratch[..<count])
            let old = UnsafeMutableBufferPointer(rebasing: scratch[count...])
            for index in 0..<count { order[index] = index }
            _ = old.update(fromContentsOf: slots[firstSlot...])
            body.bytes.withUnsafeBufferPointer { bytes in
                func compare(_ left: Int, _ right: Int) -> Int { Self.compareKeys(bytes, old[2 * left], old[2 * right]) }
                // Stable either way: equal keys stay in arrival order, the last one last.
                if count <= 32 {
                    // Insertion sort, for a model's handful of keys.
                    for index in 1..<count {
                        let entry = order[index]
                        var position = index
                        while position > 0, compare(order[position - 1], entry) > 0 {
                            order[position] = order[position - 1]
                            position -= 1
                        }
                        order[position] = entry
                    }
                } else {
                    order.sort { compare($0, $1) < 0 }
                }
                // An entry whose key the next one repeats is dropped (-1): the later value wins.
                for position in 0..<(count - 1) where compare(order[position], order[position + 1]) == 0 {
                    order[position] = -1
                }
            }
            let end = body.bytes.count
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: end - start) { contents in
                body.bytes.withUnsafeBufferPointer { _ = contents.update(fromContentsOf: $0[start..<end]) }
                body.truncate(to: start)
                var kept = 0
                for index in order where index >= 0 {
                    let keyStart = old[2 * index]
                    let entryEnd = index + 1 < count ? old[2 * index + 2] : end
                    slots[firstSlot + 2 * kept] = body.bytes.count
                    slots[firstSlot + 2 * kept + 1] = body.bytes.count + old[2 * index + 1] - keyStart
                    body.appendRaw(UnsafeBufferPointer(rebasing: contents[(keyStart - start)..<(entryEnd - start)]))
                    kept += 1
                }
                return kept
            }
        }
        if kept < count { slots.removeSubrange((firstSlot + 2 * kept)...) }
    }

    /// Compares the length-prefixed keys at `left` and `right` by their UTF-8 bytes.
    private static func compareKeys(_ bytes: UnsafeBufferPointer<UInt8>, _ left: Int, _ right: Int) -> Int {
        let a = ValueEncoder.writtenKey(in: bytes, at: left), b = ValueEncoder.writtenKey(in: bytes, at: right)
        for index in 0..<min(a.count, b.count) where a[index] != b[index] {
            return a[index] < b[index] ? -1 : 1
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

}
