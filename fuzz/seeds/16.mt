-- a script
SHOW TRACES; FIND sessions;
DESCRIBE $ref;
