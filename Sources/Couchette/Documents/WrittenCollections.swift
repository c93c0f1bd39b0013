/// The collections (by number) one object was written to in one batch: almost always one, kept
/// without an array. A `MutableDocument` and a model's `@DocumentID` carry it, so that a batch of
/// many documents keeps no table of them (numbers, because hashing a collection's names for every
/// save would cost more).
struct WrittenCollections {
    var first: UInt32?
    var others: [UInt32] = []

    /// Adds `number`; returns whether it was there already.
    mutating func insert(_ number: UInt32) -> Bool {
        guard let first else {
            first = number
            return false
        }
        if first == number || others.contains(number) { return true }
        others.append(number)
        return false
    }
}
