/// The revision history of one document: a forest of revisions linked child → parent.
///
/// Local saves always extend the winning leaf, so without replication the tree is a single chain.
/// Replication (a later layer) grafts remote histories in, which can create several leaves; the
/// winner is chosen as CouchDB does — live leaves before deleted ones, then the higher generation,
/// then the higher digest — so every peer picks the same one without talking.
///
/// Only ``maximumDepth`` ancestors of each leaf are kept; older ones are pruned.
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

    static let maximumDepth = 20

    private(set) var nodes: [Node] = []

    var isEmpty: Bool { nodes.isEmpty }

    func index(of revisionID: String) -> Int? { nodes.firstIndex { $0.revisionID == revisionID } }

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

    /// Adds a revision as a child of `parent` (nil: a new root), then prunes old ancestors.
    mutating func add(_ revisionID: String, parent: String?, isDeleted: Bool, sequence: UInt64, body: [UInt8]? = nil) {
        let parentIndex = parent.flatMap(index(of:))
        if let parentIndex { nodes[parentIndex].body = nil }  // no longer a leaf
        nodes.append(Node(revisionID: revisionID, parent: parentIndex, isDeleted: isDeleted, sequence: sequence, body: body))
        prune(depth: Self.maximumDepth)
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
    mutating func graft(history: [String], isDeleted: Bool, sequence: UInt64, body: [UInt8]?) throws -> Bool {
        try Self.validate(history: history)
        let newest = history[0]
        guard index(of: newest) == nil else { return false }
        let known = history.dropFirst().firstIndex { index(of: $0) != nil }
        var parent = known.map { history[$0] }
        for position in stride(from: (known ?? history.count) - 1, through: 1, by: -1) {
            add(history[position], parent: parent, isDeleted: false, sequence: sequence)
            parent = history[position]
        }
        add(newest, parent: parent, isDeleted: isDeleted, sequence: sequence, body: isDeleted ? nil : body)
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

    /// `u32 count`, then per node: `u8 flags` (1 deleted, 2 has parent, 4 has body), `u32 parent`,
    /// `u64 sequence`, `u16 length` + revision id, and when flagged `u32 length` + body. Little-endian.
    func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        append(UInt32(nodes.count), to: &bytes)
        for node in nodes {
            var flags: UInt8 = node.isDeleted ? 1 : 0
            if node.parent != nil { flags |= 2 }
            if node.body != nil { flags |= 4 }
            bytes.append(flags)
            append(UInt32(node.parent ?? 0), to: &bytes)
            append(node.sequence, to: &bytes)
            let revision = Array(node.revisionID.utf8)
            append(UInt16(revision.count), to: &bytes)
            bytes.append(contentsOf: revision)
            if let body = node.body {
                append(UInt32(body.count), to: &bytes)
                bytes.append(contentsOf: body)
            }
        }
        return bytes
    }

    init() {}

    init(decoding bytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(bytes: bytes)
        let count = Int(try reader.read(UInt32.self))
        for _ in 0..<count {
            let flags = try reader.read(UInt8.self)
            let parent = Int(try reader.read(UInt32.self))
            let sequence = try reader.read(UInt64.self)
            let revision = try reader.string(length: Int(try reader.read(UInt16.self)))
            let body = flags & 4 != 0 ? try reader.bytes(length: Int(try reader.read(UInt32.self))) : nil
            nodes.append(Node(revisionID: revision, parent: flags & 2 != 0 ? parent : nil,
                              isDeleted: flags & 1 != 0, sequence: sequence, body: body))
        }
        guard nodes.allSatisfy({ ($0.parent ?? 0) < nodes.count }) else {
            throw CouchetteError(.corruption, "revision tree has a parent index out of range")
        }
    }

    private func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}

/// Bounds-checked little-endian reading of stored records; damaged bytes throw `.corruption`.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    mutating func read<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        guard position + size <= bytes.count else { throw truncated() }
        var value: T = 0
        for index in (0..<size).reversed() { value = value << 8 | T(bytes[position + index]) }
        position += size
        return value
    }

    mutating func bytes(length: Int) throws -> [UInt8] {
        guard length >= 0, position + length <= bytes.count else { throw truncated() }
        defer { position += length }
        return Array(bytes[position..<(position + length)])
    }

    mutating func string(length: Int) throws -> String {
        String(decoding: try bytes(length: length), as: UTF8.self)
    }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] {
        defer { position = bytes.count }
        return Array(bytes[position...])
    }

    private func truncated() -> CouchetteError {
        CouchetteError(.corruption, "stored record is truncated at byte \(position) of \(bytes.count)")
    }
}
