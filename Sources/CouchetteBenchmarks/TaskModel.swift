import Couchette
import Foundation

/// The Codable model of the model workloads: `TodoTask {id, title, completed, priority, tags[3],
/// createdAt}`, as the Codable issue describes it.
public final class BenchTask: Codable {
    @DocumentID public var id: String?
    public var title: String
    public var completed: Bool
    public var priority: Int
    public var tags: [String]
    public var createdAt: Date

    public init(id: String, title: String, completed: Bool, priority: Int, tags: [String], createdAt: Date) {
        self.id = id
        self.title = title
        self.completed = completed
        self.priority = priority
        self.tags = tags
        self.createdAt = createdAt
    }

    /// The same fields as a plain dictionary (what the non-Codable paths store).
    public var properties: [String: Any] {
        [
            "title": title, "completed": completed, "priority": priority, "tags": tags,
            "createdAt": ISO8601DateFormatter.couchette.string(from: createdAt),
        ]
    }

    /// `count` tasks with seeded contents; ids `task-0000000`, ….
    public static func generate(count: Int, seed: UInt64 = 7) -> [BenchTask] {
        var random = SplitMix64(seed: seed)
        let words = ["milk", "report", "call", "plants", "taxes", "gym", "car", "books", "garden", "email"]
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        return (0..<count).map { number in
            let digits = String(number)
            let id = "task-" + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
            let title = "\(words[Int(random.next() % 10)]) \(words[Int(random.next() % 10)]) \(number)"
            let tags = (0..<3).map { _ in words[Int(random.next() % 10)] }
            // Whole milliseconds, so every engine's date text is identical.
            let created = base.addingTimeInterval(Double(random.next() % 10_000_000_000) / 1000)
            return BenchTask(
                id: id, title: title, completed: random.next() % 2 == 0,
                priority: Int(random.next() % 5), tags: tags, createdAt: created)
        }
    }

    /// What the baselines store: the task without its id, which is their primary key (as a SQLite
    /// user would store a model).
    struct Body: Codable {
        var title: String
        var completed: Bool
        var priority: Int
        var tags: [String]
        var createdAt: Date
    }

    var body: Body { Body(title: title, completed: completed, priority: priority, tags: tags, createdAt: createdAt) }

    convenience init(id: String, body: Body) {
        self.init(
            id: id, title: body.title, completed: body.completed, priority: body.priority, tags: body.tags,
            createdAt: body.createdAt)
    }

    /// The baselines' model read: each stored JSON body decoded with `JSONDecoder` into a task;
    /// returns the sum of their priorities.
    static func decodePriorities(_ ids: [String], engine: String, stored: (String) throws -> Data?) throws -> Int {
        let decoder = jsonDecoder()
        var total = 0
        for id in ids {
            guard let data = try stored(id) else { throw BenchmarkError.engine("\(engine) lost \(id)") }
            total += BenchTask(id: id, body: try decoder.decode(Body.self, from: data)).priority
        }
        return total
    }

    /// Encoders for the baselines: dates as Couchette stores them.
    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ISO8601DateFormatter.couchette.string(from: date))
        }
        return encoder
    }

    static func jsonDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = ISO8601DateFormatter.couchette.date(from: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "bad date \(text)"))
            }
            return date
        }
        return decoder
    }
}

extension ISO8601DateFormatter {
    /// `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`, the form Couchette stores dates in.
    // nonisolated(unsafe): configured once here and only read afterwards; Foundation documents
    // ISO8601DateFormatter as thread-safe for formatting and parsing.
    nonisolated(unsafe) static let couchette: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
