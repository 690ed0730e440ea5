/// Values shared by tests.
public enum TestConstants {
    /// The Storage bucket tests configure.
    public static let bucket = "test-bucket"
    /// The Firebase project id tests configure.
    public static let projectID = "locify-test"
    /// The project id of in-process servers in Auth emulator mode (the server refuses emulator
    /// mode unless the id starts with `demo-`).
    public static let emulatorProjectID = "demo-locify-test"
}
