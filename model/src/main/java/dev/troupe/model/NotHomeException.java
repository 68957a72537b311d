package dev.troupe.model;

/**
 * {@link ErrorCode#NOT_HOME}: a write to an entity of a strong type homed in another data centre,
 * refused before anything was done. Carries the home's name so that a server can forward the
 * request there.
 */
public final class NotHomeException extends TroupeException {
  private final String homeDataCentre;

  public NotHomeException(String homeDataCentre, String message) {
    super(ErrorCode.NOT_HOME, message);
    this.homeDataCentre = homeDataCentre;
  }

  /** The name of the data centre that runs the refused write. */
  public String homeDataCentre() {
    return homeDataCentre;
  }
}
