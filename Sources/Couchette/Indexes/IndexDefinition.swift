import Foundation

/// An index as stored in the `indexes` table: what to index, and the number its entries are
/// stored under in `index-entries`.
struct IndexDefinition: Codable, Sendable, Equatable {
    enum Kind: String, Codable, Sendable { case value, array }

    var number: UInt32
    var kind: Kind
    var expressions: [String]
    var whereClause: String?
    var path: String?

    init(number: UInt32, configuration: any IndexConfiguration) throws {
        self.number = number
        switch configuration {
        case let value as ValueIndexConfiguration:
            kind = .value
            expressions = value.expressions
            whereClause = value.whereClause
            guard !expressions.isEmpty else {
                throw CouchetteError(.invalidQuery, "a value index needs at least one expression")
            }
        case let array as ArrayIndexConfiguration:
            kind = .array
            expressions = array.expressions ?? []
            path = array.path
            if array.expressions?.isEmpty == true {
                throw CouchetteError(.invalidQuery, "an array index's expressions must be nil or non-empty")
            }
        default:
            throw CouchetteError(.unsupported, "index configuration \(type(of: configuration)) is not supported")
        }
    }

    /// True when both describe the same index (whatever their numbers).
    func sameConfiguration(as other: IndexDefinition) -> Bool {
        kind == other.kind && expressions == other.expressions && whereClause == other.whereClause && path == other.path
    }

    func encoded() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    init(decoding bytes: [UInt8]) throws {
        do {
            self = try JSONDecoder().decode(IndexDefinition.self, from: Data(bytes))
        } catch {
            throw CouchetteError(.corruption, "unreadable index definition: \(error)")
        }
    }

    /// How `explain()` and `couchette index list` show it.
    var summary: String {
        var text: String
        switch kind {
        case .value: text = "(" + expressions.joined(separator: ", ") + ")"
        case .array: text = "ARRAY \(path ?? "")" + (expressions.isEmpty ? "" : " (" + expressions.joined(separator: ", ") + ")")
        }
        if let whereClause { text += " WHERE \(whereClause)" }
        return text
    }
}
