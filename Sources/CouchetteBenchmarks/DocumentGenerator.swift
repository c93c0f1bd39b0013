import Foundation

/// Seeded documents shaped like `Tests/CouchetteTests/Fixtures/data/names_100.json`: names, a nested contact with an
/// address, arrays of e-mails, phones and likes, and dates. The same seed gives the same bytes, so
/// every engine stores exactly the same data.
public struct DocumentGenerator: Sendable {
    public struct GeneratedDocument: Sendable {
        public let id: String
        /// Compact JSON with sorted keys.
        public let json: String
    }

    private static let firstNames = [
        "Lue", "Jasper", "Kandra", "Alda", "Marin", "Rosalie", "Eusebio", "Tijuana",
        "Donnie", "Lucinda", "Ann", "Bruno", "Chiara", "Dmitri", "Esme", "Farid",
    ]
    private static let lastNames = [
        "Laserna", "Grebel", "Beichner", "Panora", "Dohrmann", "Allegro", "Kowalski",
        "Nguyen", "Okafor", "Petrov", "Quinn", "Rossi", "Santos", "Tanaka",
    ]
    private static let cities = [
        ("San Pedro", "CA", "310"), ("Burns", "KS", "316"), ("Albany", "NY", "518"),
        ("Austin", "TX", "512"), ("Boise", "ID", "208"), ("Denver", "CO", "303"),
        ("Miami", "FL", "305"), ("Salem", "OR", "503"),
    ]
    private static let streets = ["Deer Loop", "Florida Loop", "Oak Street", "Main Street", "Hill Road", "Lake Drive"]
    private static let likes = ["chatting", "shopping", "swimming", "driving", "biking", "travelling", "reading"]

    public let seed: UInt64

    public init(seed: UInt64 = 0xC0FFEE) { self.seed = seed }

    /// Documents `0..<count`, with ids `doc-0000001`, ….
    public func documents(count: Int) -> [GeneratedDocument] {
        Array(lazyDocuments(count: count))
    }

    /// The same documents as ``documents(count:)``, generated one at a time as the sequence is
    /// iterated: for data sets too big to hold.
    public func lazyDocuments(count: Int) -> UnfoldSequence<GeneratedDocument, (SplitMix64, Int)> {
        sequence(state: (SplitMix64(seed: seed), 0)) { state in
            guard state.1 < count else { return nil }
            defer { state.1 += 1 }
            return document(number: state.1, random: &state.0)
        }
    }

    public static func id(_ number: Int) -> String {
        let digits = String(number)
        return "doc-" + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
    }

    private func document(number: Int, random: inout SplitMix64) -> GeneratedDocument {
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        let first = pick(Self.firstNames)
        let last = pick(Self.lastNames)
        let (city, state, region) = pick(Self.cities)
        let likeCount = Int(random.next() % 3)
        var likes: [String] = []
        for _ in 0...likeCount { likes.append(pick(Self.likes)) }
        let email = "\(first.lowercased()).\(last.lowercased())\(number)@nosql-matters.org"
        let body: [String: Any] = [
            "name": ["first": first, "last": last],
            "gender": random.next() % 2 == 0 ? "female" : "male",
            "birthday": date(random: &random, fromYear: 1950, years: 50),
            "contact": [
                "address": [
                    "street": "\(random.next() % 99 + 1) \(pick(Self.streets))",
                    "zip": String(format: "%05d", Int(random.next() % 99_999)),
                    "city": city, "state": state,
                ],
                "email": [email],
                "region": region,
                "phone": ["\(region)-\(1_000_000 + random.next() % 8_999_999)"],
            ],
            "likes": likes,
            "memberSince": date(random: &random, fromYear: 2005, years: 15),
            "visits": Int(random.next() % 1000),
        ]
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return GeneratedDocument(id: Self.id(number), json: String(decoding: data, as: UTF8.self))
    }

    private func date(random: inout SplitMix64, fromYear year: Int, years: Int) -> String {
        let y = year + Int(random.next() % UInt64(years))
        let m = 1 + Int(random.next() % 12)
        let d = 1 + Int(random.next() % 28)
        return String(format: "%04d-%02d-%02d", y, m, d)
    }
}

/// A small, fast, seedable random generator (Steele, Lea & Flood's SplitMix64).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
