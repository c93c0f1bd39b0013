/// A growable buffer of plain values written through a pointer: what ``BinarySink`` writes into.
///
/// An `Array` append checks uniqueness, and appending a slice retains and releases its storage:
/// together about a sixth of transcoding JSON. Here a write checks the capacity and stores.
///
/// Not a value type: copies share one allocation (each copy keeps it alive, so a copy never
/// reads freed memory, but writes through one copy show in the other). Keep one owner.
struct PlainBuffer<Element: BitwiseCopyable> {
    /// The elements live in the object itself (tail-allocated): one allocation per buffer. Being
    /// plain values, they need no deinitialization when it goes.
    private final class Allocation: ManagedBuffer<Void, Element> {
        static func make(capacity: Int) -> (Allocation, UnsafeMutablePointer<Element>) {
            let allocation = unsafeDowncast(create(minimumCapacity: capacity) { _ in () }, to: Allocation.self)
            // The pointer stays valid as long as the allocation lives, and the buffer keeps it.
            return (allocation, allocation.withUnsafeMutablePointerToElements { $0 })
        }
    }

    /// Nil while the elements are in memory the caller lent (``init(borrowing:)``).
    private var allocation: Allocation?
    /// The first element; valid until the next call that may grow the buffer.
    private(set) var pointer: UnsafeMutablePointer<Element>
    private(set) var count = 0
    private(set) var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        (allocation, pointer) = Allocation.make(capacity: self.capacity)
    }

    /// A buffer that starts in `room`, memory the caller owns and keeps valid as long as the
    /// buffer is used; past its capacity the elements move to an allocation of the buffer's own.
    init(borrowing room: UnsafeMutableBufferPointer<Element>) {
        capacity = room.count
        allocation = nil
        // A lent region always has a base; an empty one is never written (the first write grows).
        pointer = room.baseAddress ?? UnsafeMutablePointer(bitPattern: MemoryLayout<Element>.alignment)!
    }

    /// Makes room for `extra` more elements after ``count``.
    @inline(__always) mutating func reserve(_ extra: Int) {
        if _slowPath(capacity - count < extra) { grow(toHold: count + extra) }
    }

    @inline(never) private mutating func grow(toHold needed: Int) {
        let newCapacity = max(needed, 2 * capacity)
        let (larger, largerPointer) = Allocation.make(capacity: newCapacity)
        largerPointer.initialize(from: pointer, count: count)
        allocation = larger
        pointer = largerPointer
        capacity = newCapacity
    }

    @inline(__always) mutating func append(_ element: Element) {
        reserve(1)
        (pointer + count).initialize(to: element)
        count += 1
    }

    mutating func append(_ elements: UnsafeBufferPointer<Element>) {
        reserve(elements.count)
        if let source = elements.baseAddress { (pointer + count).initialize(from: source, count: elements.count) }
        count += elements.count
    }

    /// Moves the end by `delta` elements (after ``reserve(_:)`` when growing): the caller has
    /// written, or will write, every element it adds, and drops the ones it removes.
    @inline(__always) mutating func moveEnd(by delta: Int) {
        count += delta
    }

    /// Removes and returns the last element; the buffer must not be empty.
    @inline(__always) mutating func removeLast() -> Element {
        precondition(count > 0, "removeLast on an empty buffer")
        count -= 1
        return pointer[count]
    }

    /// Drops every element from `newCount` on.
    mutating func truncate(to newCount: Int) {
        count = min(count, max(newCount, 0))
    }

    @inline(__always) subscript(index: Int) -> Element {
        get { pointer[index] }
        set { pointer[index] = newValue }
    }

    /// The elements, valid until the next call that may grow the buffer.
    var elements: UnsafeBufferPointer<Element> { UnsafeBufferPointer(start: pointer, count: count) }
}
