/// The best `capacity` rows seen so far under an ordering: a binary heap with the worst kept row
/// at its root, so each new row costs O(log capacity) and memory stays at `capacity` rows
/// (`ORDER BY … LIMIT k` never holds the whole result).
struct TopRows<Row> {
    let capacity: Int
    /// `precedes(a, b)`: a sorts before b.
    let precedes: (Row, Row) -> Bool
    private(set) var rows: [Row] = []

    init(capacity: Int, precedes: @escaping (Row, Row) -> Bool) {
        self.capacity = capacity
        self.precedes = precedes
        rows.reserveCapacity(min(capacity, 1024))
    }

    mutating func insert(_ row: Row) {
        guard capacity > 0 else { return }
        if rows.count < capacity {
            rows.append(row)
            siftUp(rows.count - 1)
        } else if precedes(row, rows[0]) {
            rows[0] = row
            siftDown(0)
        }
    }

    /// The kept rows, in order.
    func sorted() -> [Row] { rows.sorted(by: precedes) }

    /// In the heap, a parent never precedes its children (the root is the last in order).
    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(rows[parent], rows[child]) else { return }
            rows.swapAt(parent, child)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            var last = parent
            for child in [2 * parent + 1, 2 * parent + 2] where child < rows.count && precedes(rows[last], rows[child]) {
                last = child
            }
            if last == parent { return }
            rows.swapAt(parent, last)
            parent = last
        }
    }
}
