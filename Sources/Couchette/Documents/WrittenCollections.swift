/// The collections (by number) one object was written to in one batch: almost always one, kept
/// without an array. A written `MutableDocument` or model carries it, so that writing the same
/// object again in the batch builds on its first write.
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
