import Couchette
import Foundation

/// How query results are printed: `table` for people, `json` (one array) and `jsonl` (one object
/// per line) for scripts. The JSON forms are the rows' ``QueryResult/toJSON()``, in order.
enum ResultFormat: String, CaseIterable, Sendable {
    case table, json, jsonl

    static var names: [String] { allCases.map(\.rawValue) }

    /// `table` on a terminal, `jsonl` when standard output is a pipe or a file.
    static var automatic: ResultFormat { Terminal.standardOutputIsTerminal ? .table : .jsonl }
}

enum ResultPrinter {
    /// Prints `results` in `format`; a table ends with the row count and `elapsed`.
    static func print(_ results: ResultSet, columns: [String], format: ResultFormat, elapsed: Duration) {
        switch format {
        case .json:
            var first = true
            Swift.print("[", terminator: "")
            for row in results {
                Swift.print(first ? row.toJSON() : "," + row.toJSON(), terminator: "")
                first = false
            }
            Swift.print("]")
        case .jsonl:
            for row in results { Swift.print(row.toJSON()) }
        case .table:
            printTable(results, columns: columns, elapsed: elapsed)
        }
    }

    /// The longest a table cell gets before it is cut with `…`.
    static let maximumCellWidth = 60

    /// Prints `results` as an aligned table ending with the row count and, when given, `elapsed`.
    static func printTable(_ results: ResultSet, columns: [String], elapsed: Duration?) {
        let colors = Terminal.colorsOnStandardOutput
        let rows = results.map { row in columns.indices.map { cell(row.value(at: $0)) } }
        var widths = columns.map(\.count)
        for row in rows {
            for (index, text) in row.enumerated() { widths[index] = max(widths[index], text.count) }
        }
        func line(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
                .joined(separator: " | ").replacingOccurrences(of: " +$", with: "", options: .regularExpression)
        }
        if !columns.isEmpty {
            Swift.print(Terminal.bold(line(columns), colors))
            Swift.print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-"))
        }
        for row in rows { Swift.print(line(row)) }
        let count = rows.count == 1 ? "1 row" : "\(rows.count) rows"
        Swift.print(Terminal.dim(elapsed.map { "\(count) (\(seconds($0)))" } ?? count, colors))
    }

    /// A cell's text: strings as they are, other values as JSON, MISSING as nothing; one line, cut
    /// at ``maximumCellWidth``.
    static func cell(_ value: Any?) -> String {
        guard let value else { return "" }
        var text = (value as? String) ?? JSONText.encode(value)
        if text.contains(where: \.isNewline) {
            text = text.replacingOccurrences(of: "\r\n", with: " ").replacingOccurrences(of: "\n", with: " ")
                .replacingOccurrences(of: "\r", with: " ")
        }
        if text.count > maximumCellWidth { text = String(text.prefix(maximumCellWidth - 1)) + "…" }
        return text
    }

    /// `elapsed` as seconds with three decimals, e.g. `0.004 s`.
    static func seconds(_ elapsed: Duration) -> String {
        let (whole, attoseconds) = elapsed.components
        let value = Double(whole) + Double(attoseconds) / 1e18
        return String(format: "%.3f s", value)
    }
}
