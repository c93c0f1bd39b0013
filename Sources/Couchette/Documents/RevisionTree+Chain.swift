// Local edits of a document without conflicts, written without decoding its history.

extension RevisionTree {
    /// A revision as the compact encoding stores it: packed id, sequence, deleted flag.
    struct PackedNode {
        var generation: UInt32
        /// The 16 digest bytes as a packed id keeps them: two little-endian words (no array per node).
        var digest: (UInt64, UInt64)
        var sequence: UInt64
        var isDeleted: Bool

        init(generation: UInt32, digest: (UInt64, UInt64), sequence: UInt64, isDeleted: Bool) {
            self.generation = generation
            self.digest = digest
            self.sequence = sequence
            self.isDeleted = isDeleted
        }

        /// A node whose digest is given as bytes; nil unless there are 16 of them.
        init?(generation: UInt32, digest: [UInt8], sequence: UInt64, isDeleted: Bool) {
            guard digest.count == 16 else { return nil }
            self.init(generation: generation, digest: RevisionID.digestWords(digest), sequence: sequence, isDeleted: isDeleted)
        }

        /// Calls `body` with the 16 digest bytes, on the stack.
        func withDigestBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try withUnsafeBytes(of: (digest.0.littleEndian, digest.1.littleEndian), body)
        }
    }

    /// The encoding of the tree `stored` (a compact encoding, or nil for a document whose only
    /// revision is `current`) with `child` added under `current` — the bytes ``encoded()`` gives
    /// for `add(child, parent: current, …)` on the decoded tree — written by copying `stored` and
    /// appending one node. Nil when that shortcut does not hold and the tree must be decoded:
    /// the history is not one chain of packed ids ending at `current` (conflicts, ids from other
    /// peers, bodies kept in the tree, an older encoding), or adding would prune it.
    ///
    /// - Throws: `.corruption` when `stored` is damaged.
    static func appendingToChain(
        _ stored: UnsafeRawBufferPointer?, current: PackedNode, child: PackedNode, keeping limit: Int
    ) throws -> [UInt8]? {
        guard child.generation > 0 else { return nil }
        guard let stored else {
            // The document's first edit: its record alone said its history.
            guard limit >= 1 else { return nil }
            var bytes = compactMarker
            bytes.reserveCapacity(compactMarker.count + 60)
            appendVarint(2, to: &bytes)
            appendNode(current, parent: nil, to: &bytes)
            appendNode(child, parent: current, to: &bytes)
            return bytes
        }
        guard stored.starts(with: compactMarker) else { return nil }
        var reader = ByteReader(bytes: stored)
        reader.position = compactMarker.count
        let count = Int(try reader.varint(limit: UInt64(stored.count)))
        let nodesStart = reader.position
        // Adding must not make any branch longer than the limit (no pruning here).
        guard count >= 1, count + 1 <= limit + 1 else { return nil }
        // The previous node: generation and sequence (for implicit fields), where its digest lies.
        var last: (generation: UInt32, sequence: UInt64, digest: Int)?
        for position in 0..<count {
            let flags = try reader.read(UInt8.self)
            // Packed ids, no body, the first node a root and every later one the child of the previous.
            let chained: UInt8 = position == 0 ? 0 : 2 | 8
            guard flags & 32 != 0, flags & 4 == 0, flags & (2 | 8) == chained else { return nil }
            var generation: UInt64
            if flags & 16 != 0 {
                guard let previous = last else { return nil }
                generation = UInt64(previous.generation) + 1
            } else {
                generation = try reader.varint(limit: UInt64(UInt32.max))
            }
            let sequence: UInt64
            if flags & 64 != 0 {
                guard let previous = last else { return nil }
                sequence = previous.sequence
            } else {
                sequence = try reader.varint(limit: .max)
            }
            guard let packedGeneration = UInt32(exactly: generation) else { return nil }
            guard reader.position + 16 <= stored.count else {
                throw CouchetteError(.corruption, "revision tree node \(position) is cut short")
            }
            last = (packedGeneration, sequence, reader.position)
            reader.position += 16
        }
        // The digest compared as the two words it is (its 16 bytes were checked to lie in `stored`).
        guard reader.position == stored.count, let last, last.generation == current.generation,
            UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: last.digest, as: UInt64.self)) == current.digest.0,
            UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: last.digest + 8, as: UInt64.self)) == current.digest.1
        else { return nil }
        var bytes = compactMarker
        bytes.reserveCapacity(stored.count + 32)
        appendVarint(UInt64(count + 1), to: &bytes)
        bytes.append(contentsOf: stored[nodesStart...])
        // Implicit fields follow the parent as the tree stores it (a record's sequence can be newer).
        let parent = PackedNode(
            generation: last.generation, digest: current.digest, sequence: last.sequence, isDeleted: current.isDeleted)
        appendNode(child, parent: parent, to: &bytes)
        return bytes
    }

    /// One node as ``encoded()`` writes it, whose parent (if any) is the node written before it.
    private static func appendNode(_ node: PackedNode, parent: PackedNode?, to bytes: inout [UInt8]) {
        var flags: UInt8 = (node.isDeleted ? 1 : 0) | 32
        if let parent {
            flags |= 2 | 8
            if UInt64(parent.generation) + 1 == UInt64(node.generation) { flags |= 16 }
            if parent.sequence == node.sequence { flags |= 64 }
        }
        bytes.append(flags)
        if flags & 16 == 0 { appendVarint(UInt64(node.generation), to: &bytes) }
        if flags & 64 == 0 { appendVarint(node.sequence, to: &bytes) }
        node.withDigestBytes { bytes.append(contentsOf: $0) }
    }
}
