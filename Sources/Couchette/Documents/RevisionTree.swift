/// The revision history of one document: a forest of revisions linked child → parent.
///
/// Local saves always extend the winning leaf, so without replication the tree is a single chain.
/// Replication (a later layer) grafts remote histories in, which can create several leaves; the
/// winner is chosen as CouchDB does — live leaves before deleted ones, then the higher generation,
/// then the higher digest — so every peer picks the same one without talking.
///
/// Up to a limit of ancestors of each leaf are kept (``DatabaseConfiguration/maxRevisionHistory``,
/// 1,000 by default as CouchDB's `revs_limit`); older ones are pruned. Only ids: bodies of
/// revisions that are not leaves are never kept.
struct RevisionTree: Sendable, Equatable {
    struct Node: Sendable, Equatable {
        var revisionID: String
        var parent: Int?
        var isDeleted: Bool
        var sequence: UInt64
        /// Bodies are kept only for non-winning leaves (the winner's body lives in the document
        /// record). Local saves never store one.
        var body: [UInt8]?
    }

    /// Ancestors kept per leaf unless the database says otherwise: CouchDB's and PouchDB's
    /// default `revs_limit`. Peers that cut histories shorter than the other side's edits between
    /// two syncs see false conflicts (issue 16: 20 made CouchDB record one after 30 edits).
    static let defaultHistoryLimit = 1000

    private(set) var nodes: [Node] = []

    var isEmpty: Bool { nodes.isEmpty }

    /// Searched from the newest node: the revision asked for is almost always a recent leaf.
    func index(of revisionID: String) -> Int? { nodes.lastIndex { $0.revisionID == revisionID } }

    var leafIndices: [Int] {
        var hasChild = [Bool](repeating: false, count: nodes.count)
        for node in nodes { if let parent = node.parent { hasChild[parent] = true } }
        return nodes.indices.filter { !hasChild[$0] }
    }

    /// The winning leaf, or nil for an empty tree.
    var winner: Node? {
        leafIndices.map { nodes[$0] }.max { lhs, rhs in
            if lhs.isDeleted != rhs.isDeleted { return lhs.isDeleted }
            return RevisionID.isHigher(rhs.revisionID, than: lhs.revisionID)
        }
    }

    /// The ancestry of `revisionID`, newest first, as far as the tree remembers it.
    func history(of revisionID: String) -> [String] {
        var result: [String] = []
        var current = index(of: revisionID)
        while let position = current, result.count <= nodes.count {
            result.append(nodes[position].revisionID)
            current = nodes[position].parent
        }
        return result
    }

    /// Adds a revision as a child of `parent` (nil: a new root), then keeps at most `limit`
    /// ancestors per leaf (nil: prunes nothing, the caller will).
    mutating func add(
        _ revisionID: String, parent: String?, isDeleted: Bool, sequence: UInt64, body: [UInt8]? = nil,
        keeping limit: Int? = defaultHistoryLimit
    ) {
        let parentIndex = parent.flatMap(index(of:))
        if let parentIndex { nodes[parentIndex].body = nil }  // no longer a leaf
        nodes.append(Node(revisionID: revisionID, parent: parentIndex, isDeleted: isDeleted, sequence: sequence, body: body))
        if let limit { prune(depth: limit) }
    }

    /// The leaves that are not deletions: more than one means the document is in conflict.
    var liveLeaves: [Node] { leafIndices.map { nodes[$0] }.filter { !$0.isDeleted } }

    func isLeaf(_ position: Int) -> Bool { !nodes.contains { $0.parent == position } }

    mutating func setBody(_ body: [UInt8]?, at position: Int) { nodes[position].body = body }

    /// Grafts a revision received from a peer (CouchDB `new_edits=false`): `history` is the
    /// revision followed by its ancestors, newest first. The deepest ancestor already known is
    /// where the new branch starts; missing ancestors are added without bodies; with no known
    /// ancestor the history becomes a new root. Returns false when the revision is already known.
    ///
    /// - Throws: `.invalidParameter` when the history is empty or its generations do not count
    ///   down by one.
    mutating func graft(
        history: [String], isDeleted: Bool, sequence: UInt64, body: [UInt8]?,
        keeping limit: Int = defaultHistoryLimit
    ) throws -> Bool {
        try Self.validate(history: history)
        let newest = history[0]
        let positions = Dictionary(nodes.indices.map { (nodes[$0].revisionID, $0) }, uniquingKeysWith: { first, _ in first })
        guard positions[newest] == nil else { return false }
        // Ancestors beyond what will be kept are not added only to be pruned.
        let usable = history.prefix(limit + 1)
        let known = usable.dropFirst().firstIndex { positions[$0] != nil }
        var parent = known.map { usable[$0] }
        for position in stride(from: (known ?? usable.count) - 1, through: 1, by: -1) {
            add(usable[position], parent: parent, isDeleted: false, sequence: sequence, keeping: nil)
            parent = usable[position]
        }
        add(newest, parent: parent, isDeleted: isDeleted, sequence: sequence, body: isDeleted ? nil : body, keeping: limit)
        return true
    }

    /// Checks that `history` is non-empty and counts generations down by one.
    static func validate(history: [String]) throws {
        guard let newest = history.first, var generation = RevisionID.generation(of: newest) else {
            throw CouchetteError(.invalidParameter, "revision history \(history) does not start with a valid revision id")
        }
        for revision in history.dropFirst() {
            generation -= 1
            guard RevisionID.generation(of: revision) == generation else {
                throw CouchetteError(.invalidParameter, "revision history \(history) skips a generation at \(revision)")
            }
        }
    }

    /// Keeps, for every leaf, the leaf and at most `depth` of its ancestors.
    mutating func prune(depth: Int) {
        // No branch can be longer than the whole tree: the common case costs nothing.
        guard nodes.count > depth + 1 else { return }
        var keep = [Bool](repeating: false, count: nodes.count)
        for leaf in leafIndices {
            var current: Int? = leaf
            var steps = 0
            while let position = current, steps <= depth {
                keep[position] = true
                current = nodes[position].parent
                steps += 1
            }
        }
        guard keep.contains(false) else { return }
        var newIndex = [Int?](repeating: nil, count: nodes.count)
        var kept: [Node] = []
        for (position, node) in nodes.enumerated() where keep[position] {
            newIndex[position] = kept.count
            kept.append(node)
        }
        for position in kept.indices {
            kept[position].parent = kept[position].parent.flatMap { newIndex[$0] }
        }
        nodes = kept
    }

    // MARK: - Encoding

    /// Marks the compact encoding: an older tree starts with its node count as a `u32`, which
    /// can never be `0xFFFFFFFF`.
    static let compactMarker: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 2]

    /// Compact, so that 1,000-revision histories stay small (about 20 bytes a revision): the
    /// marker, a varint node count, then per node a flags byte — 1 deleted, 2 has a parent,
    /// 4 has a body, 8 the parent is the previous node, 16 the generation is the parent's plus
    /// one, 32 the id is `<generation>-<32 lowercase hex digits>` (``RevisionID/packed(_:)``), its
    /// digest stored as 16 raw bytes, 64 same sequence as the parent — followed by what the flags
    /// do not make implicit: parent index, generation (0 for a whole-text id), sequence (varints),
    /// the digest (raw) or the whole id (varint length + UTF-8), the body (varint length + bytes).
    func encoded() -> [UInt8] {
        var bytes = Self.compactMarker
        Self.appendVarint(UInt64(nodes.count), to: &bytes)
        // Ids of another shape (never made by Couchette, kept as they came) are stored whole.
        let packedIDs = nodes.map { RevisionID.packed($0.revisionID) }
        for (position, node) in nodes.enumerated() {
            let packed = packedIDs[position]
            let parent = node.parent.map { nodes[$0] }
            let parentGeneration = node.parent.flatMap {
                packedIDs[$0].map { Int($0.generation) } ?? RevisionID.generation(of: nodes[$0].revisionID)
            }
            var flags: UInt8 = node.isDeleted ? 1 : 0
            if node.parent != nil { flags |= 2 }
            if node.body != nil { flags |= 4 }
            if let index = node.parent, index == position - 1 { flags |= 8 }
            if let packed, let parentGeneration, parentGeneration + 1 == Int(packed.generation) { flags |= 16 }
            if packed != nil { flags |= 32 }
            if let parent, parent.sequence == node.sequence { flags |= 64 }
            bytes.append(flags)
            if let index = node.parent, flags & 8 == 0 { Self.appendVarint(UInt64(index), to: &bytes) }
            if flags & 16 == 0 { Self.appendVarint(UInt64(packed?.generation ?? 0), to: &bytes) }
            if flags & 64 == 0 { Self.appendVarint(node.sequence, to: &bytes) }
            if let packed {
                bytes.append(contentsOf: packed.digest)
            } else {
                let text = Array(node.revisionID.utf8)
                Self.appendVarint(UInt64(text.count), to: &bytes)
                bytes.append(contentsOf: text)
            }
            if let body = node.body {
                Self.appendVarint(UInt64(body.count), to: &bytes)
                bytes.append(contentsOf: body)
            }
        }
        return bytes
    }

    init() {}

    init(decoding bytes: UnsafeRawBufferPointer) throws {
        self.init()
        guard bytes.starts(with: Self.compactMarker) else {
            nodes = try Self.legacyNodes(bytes)
            return
        }
        var reader = ByteReader(bytes: bytes)
        reader.position = Self.compactMarker.count
        let count = try reader.varint(limit: UInt64(bytes.count))
        nodes.reserveCapacity(Int(count))
        var generations: [Int?] = []  // of each node read so far, for implicit generations
        generations.reserveCapacity(Int(count))
        for position in 0..<Int(count) {
            let flags = try reader.read(UInt8.self)
            var parent: Int?
            if flags & 2 != 0 {
                parent = flags & 8 != 0 ? position - 1 : Int(try reader.varint(limit: UInt64(position)))
                guard let index = parent, index >= 0, index < position else {
                    throw CouchetteError(.corruption, "revision tree node \(position) names a parent that does not precede it")
                }
            }
            let parentNode = parent.map { nodes[$0] }
            var generation = 0
            if flags & 16 != 0 {
                guard let parentGeneration = parent.flatMap({ generations[$0] }) else {
                    throw CouchetteError(.corruption, "revision tree node \(position) has no parent generation to follow")
                }
                generation = parentGeneration + 1
            } else {
                generation = Int(try reader.varint(limit: UInt64(UInt32.max)))
            }
            let sequence: UInt64
            if flags & 64 != 0, let parentNode {
                sequence = parentNode.sequence
            } else {
                sequence = try reader.varint(limit: .max)
            }
            let revisionID: String
            if flags & 32 != 0 {
                guard let packedGeneration = UInt32(exactly: generation) else {
                    throw CouchetteError(.corruption, "revision tree node \(position) has generation \(generation)")
                }
                revisionID = RevisionID.unpacked(generation: packedGeneration, digest: try reader.bytes(length: 16))
            } else {
                revisionID = try reader.string(length: Int(try reader.varint(limit: UInt64(bytes.count))))
            }
            let body = flags & 4 != 0 ? try reader.bytes(length: Int(try reader.varint(limit: UInt64(bytes.count)))) : nil
            nodes.append(Node(revisionID: revisionID, parent: parent, isDeleted: flags & 1 != 0, sequence: sequence, body: body))
            generations.append(flags & 32 != 0 ? generation : RevisionID.generation(of: revisionID))
        }
    }

    /// The encoding before 1,000-revision histories: `u32 count`, then per node `u8 flags`
    /// (1 deleted, 2 has parent, 4 has body), `u32 parent`, `u64 sequence`, `u16 length` +
    /// revision id, and when flagged `u32 length` + body. Still read; rewritten compactly on
    /// the document's next write.
    private static func legacyNodes(_ bytes: UnsafeRawBufferPointer) throws -> [Node] {
        var nodes: [Node] = []
        var reader = ByteReader(bytes: bytes)
        let count = Int(try reader.read(UInt32.self))
        for _ in 0..<count {
            let flags = try reader.read(UInt8.self)
            let parent = Int(try reader.read(UInt32.self))
            let sequence = try reader.read(UInt64.self)
            let revision = try reader.string(length: Int(try reader.read(UInt16.self)))
            let body = flags & 4 != 0 ? try reader.bytes(length: Int(try reader.read(UInt32.self))) : nil
            nodes.append(
                Node(
                    revisionID: revision, parent: flags & 2 != 0 ? parent : nil,
                    isDeleted: flags & 1 != 0, sequence: sequence, body: body))
        }
        guard nodes.allSatisfy({ ($0.parent ?? 0) < nodes.count }) else {
            throw CouchetteError(.corruption, "revision tree has a parent index out of range")
        }
        return nodes
    }

    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}
