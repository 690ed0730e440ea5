import LocifyRules
import Testing

@Suite("Control characters: the one rule")
struct ControlCharacterTests {
    @Test("is exactly Unicode general category Cc")
    func matchesGeneralCategoryCc() {
        for value in UInt32(0)...0x2FF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            #expect(ControlCharacter.isControl(scalar) == (scalar.properties.generalCategory == .control))
        }
        #expect(ControlCharacter.isControl("\u{0}") && ControlCharacter.isControl("\u{7F}") && ControlCharacter.isControl("\u{9F}"))
        #expect(!ControlCharacter.isControl(" ") && !ControlCharacter.isControl("\u{A0}") && !ControlCharacter.isControl("\u{200B}"))
    }
}
