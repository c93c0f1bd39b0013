// Fails when a public declaration of the Couchette library has no doc comment of its own.
//
// Usage: swift scripts/doc-coverage.swift SYMBOL-GRAPH-DIR  (scripts/docs runs it)
//
// Reads the symbol graphs swift-symbolgraph-extract wrote for the module and lists every public
// symbol declared under Sources/Couchette whose documentation is empty or only inherited from
// the standard library (`==`, `hash(into:)`, `description`, …: DocC would show Swift's generic
// text). A member implementing a requirement of a Couchette protocol may inherit that
// requirement's comment, as DocC shows it. Default implementations that several types share
// count once, at their declaration. A top-level type's comment must also show an example (a
// fenced code block), as CONTRIBUTING asks.
import Foundation

struct SymbolGraph: Decodable {
    struct Symbol: Decodable {
        struct Location: Decodable {
            struct Position: Decodable { let line: Int; let character: Int }
            let uri: String
            let position: Position
        }
        struct DocComment: Decodable {
            struct Line: Decodable { let text: String }
            let module: String?
            let lines: [Line]
        }
        struct Kind: Decodable { let identifier: String; let displayName: String }
        let kind: Kind
        let pathComponents: [String]
        let location: Location?
        let docComment: DocComment?
    }
    let symbols: [Symbol]
}

struct Declaration: Hashable, Comparable {
    let file: String
    let line: Int
    let column: Int
    static func < (a: Declaration, b: Declaration) -> Bool {
        (a.file, a.line, a.column) < (b.file, b.line, b.column)
    }
}

let arguments = CommandLine.arguments.dropFirst()
guard let directory = arguments.first else {
    FileHandle.standardError.write(Data("usage: doc-coverage.swift SYMBOL-GRAPH-DIR\n".utf8))
    exit(2)
}
let module = "Couchette"
let sourceFolder = "/Sources/\(module)/"
let files = try FileManager.default.contentsOfDirectory(atPath: directory)
    .filter { $0.hasPrefix(module) && $0.hasSuffix(".symbols.json") }
guard !files.isEmpty else {
    FileHandle.standardError.write(Data("doc-coverage: no \(module) symbol graph in \(directory)\n".utf8))
    exit(2)
}

let typeKinds: Set<String> = ["swift.class", "swift.struct", "swift.enum", "swift.protocol", "swift.typealias"]
var documented: [Declaration: Bool] = [:]
var names: [Declaration: String] = [:]
var typesWithoutExample: [Declaration: String] = [:]
for file in files {
    let data = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(file))
    for symbol in try JSONDecoder().decode(SymbolGraph.self, from: data).symbols {
        guard let location = symbol.location, let range = location.uri.range(of: sourceFolder) else { continue }
        let declaration = Declaration(
            file: "Sources/\(module)/" + location.uri[range.upperBound...],
            line: location.position.line + 1,
            column: location.position.character + 1)
        let comment = symbol.docComment
        let hasOwn =
            comment?.module == module
            && comment!.lines.contains { !$0.text.trimmingCharacters(in: .whitespaces).isEmpty }
        documented[declaration] = (documented[declaration] ?? false) || hasOwn
        names[declaration] = names[declaration] ?? "\(symbol.kind.displayName) \(symbol.pathComponents.joined(separator: "."))"
        if hasOwn, symbol.pathComponents.count == 1, typeKinds.contains(symbol.kind.identifier),
            !comment!.lines.contains(where: { $0.text.trimmingCharacters(in: .whitespaces).hasPrefix("```") })
        {
            typesWithoutExample[declaration] = names[declaration]
        }
    }
}

let missing = documented.filter { !$0.value }.keys.sorted()
for declaration in missing {
    print("\(declaration.file):\(declaration.line):\(declaration.column): error: public \(names[declaration]!) has no doc comment")
}
for (declaration, name) in typesWithoutExample.sorted(by: { $0.key < $1.key }) {
    print(
        "\(declaration.file):\(declaration.line):\(declaration.column): error: public \(name) has no example (a ```swift block) in its doc comment"
    )
}
print(
    "doc-coverage: \(documented.count - missing.count) of \(documented.count) public declarations documented,"
        + " \(typesWithoutExample.count) top-level types without an example")
exit(missing.isEmpty && typesWithoutExample.isEmpty ? 0 : 1)
